import { describe, expect, it } from 'vitest';
import {
  TargetRefusedError,
  maxWebhookUrlLength,
  normaliseWebhookUrl,
  parseWebhookUrl,
} from '../../src/shared/webhooks/target-policy.js';
import { mulberry32 } from '../support/prng.js';

// The one rule for a webhook URL an operator or a client gives (API and admin CLI): refused with
// a reason, or stored as the WHATWG href the dispatcher sends to, which the table can hold.

/** What migrations/0006_webhooks.sql's CHECK on webhook_endpoints.url requires. */
const storable = (url: string) => /^https?:\/\//.test(url) && [...url].length <= maxWebhookUrlLength;

const refusal = (value: string) => {
  try {
    normaliseWebhookUrl(value);
  } catch (err) {
    expect(err, JSON.stringify(value)).toBeInstanceOf(TargetRefusedError);
    return (err as Error).message;
  }
  throw new Error(`accepted ${JSON.stringify(value)}`);
};

describe('normaliseWebhookUrl', () => {
  it('answers the href the dispatcher sends to', () => {
    const cases: [string, string][] = [
      ['HTTP://Example.COM/Hooks', 'http://example.com/Hooks'],
      ['HttpS://example.com', 'https://example.com/'],
      [' https://example.com/x ', 'https://example.com/x'],
      ['https://example.com:443/a/../b/./c', 'https://example.com/b/c'],
      ['https://example.com/a b?c d', 'https://example.com/a%20b?c%20d'],
      ['https://münchen.example/straße', 'https://xn--mnchen-3ya.example/stra%C3%9Fe'],
      ['http:\\\\example.com\\x', 'http://example.com/x'],
    ];
    for (const [given, href] of cases) {
      expect(normaliseWebhookUrl(given), given).toBe(href);
      expect(normaliseWebhookUrl(href), `again ${href}`).toBe(href);
      expect(parseWebhookUrl(href).href, `as sent ${href}`).toBe(href);
    }
  });

  it('refuses control characters anywhere (tab, CR, LF, NUL, DEL, C1), which the URL parser would drop or encode', () => {
    const url = 'https://example.com/hooks';
    for (const c of ['\t', '\n', '\r', '\r\n', '\u0000', '\u0001', '\u001b', '\u007f', '\u0085', '\u009f']) {
      for (const value of [`${c}${url}`, `${url}${c}`, `https://example.com/ho${c}oks`, `https://exam${c}ple.com/`])
        expect(refusal(value)).toMatch(/control character U\+00[0-9A-F]{2}/);
    }
  });

  it('refuses unpaired surrogates (the parser would send U+FFFD)', () => {
    for (const value of [
      'https://example.com/\ud800',
      '\udfffhttps://example.com/',
      'https://example.com/\udc00\ud800',
    ])
      expect(refusal(value)).toMatch(/unpaired UTF-16 surrogate/);
    expect(normaliseWebhookUrl('https://example.com/\u{1f600}')).toBe('https://example.com/%F0%9F%98%80');
  });

  it('refuses an href longer than the limit even when the text given is shorter', () => {
    const base = 'https://example.com/';
    const exact = base + 'x'.repeat(maxWebhookUrlLength - base.length);
    expect(normaliseWebhookUrl(exact)).toBe(exact);
    expect(refusal(`${exact}x`)).toMatch(/longer than 2000/);
    const encoded = `${base}${'é'.repeat(400)}`; // 420 characters, 2420 once percent-encoded
    expect(encoded.length).toBeLessThan(maxWebhookUrlLength);
    expect(refusal(encoded)).toMatch(/longer than 2000 characters once normalised/);
  });

  it('refuses what is not an absolute http(s) URL without credentials or fragment', () => {
    for (const value of [
      '',
      ' ',
      'nope',
      '/relative',
      'example.com/hooks',
      'ftp://example.com/x',
      'javascript:alert(1)',
      'data:text/plain,x',
      'file:///etc/passwd',
      'ws://example.com/',
      'http://',
      'http://[::1',
      'http://exa mple.com/',
      'https://user:pw@example.com/',
      'HTTPS://USER@example.com/',
      'https://example.com/#f',
      'https://example.com/#',
    ])
      refusal(value);
  });

  it('returns only what the table can store, equal to the parsed href (property)', () => {
    const seed = Date.now() % 100_000;
    const rnd = mulberry32(seed);
    const pick = <T>(xs: readonly T[]) => xs[Math.floor(rnd() * xs.length)]!;
    const pieces = [
      'http://',
      'HTTPS://',
      'hTtP:',
      '//',
      '\\',
      ' ',
      '\t',
      '\r\n',
      '\u0000',
      '\u0085',
      '\ud800',
      '\u{1f600}',
      'é',
      '%',
      '%2e',
      '..',
      '/',
      '?',
      '#',
      '@',
      ':',
      ':80',
      '[::1]',
      'example.com',
      'EXAMPLE.com',
      '93.184.215.14',
      'münchen',
      'a'.repeat(500),
      'é'.repeat(200),
    ];
    const starts = [
      'https://example.com',
      'HTTP://93.184.215.14:80',
      ' http://münchen.example',
      'hTtP:\\\\EXAMPLE.com',
    ];
    let accepted = 0;
    for (let i = 0; i < 5000; i++) {
      const start = rnd() < 0.7 ? pick(starts) : '';
      const value = start + Array.from({ length: Math.floor(rnd() * 8) }, () => pick(pieces)).join('');
      let href: string;
      try {
        href = normaliseWebhookUrl(value);
      } catch (err) {
        expect(err, `seed ${seed}: ${JSON.stringify(value)}`).toBeInstanceOf(TargetRefusedError);
        continue;
      }
      expect(storable(href), `seed ${seed}: ${JSON.stringify(value)} -> ${href}`).toBe(true);
      expect(href, `seed ${seed}: ${JSON.stringify(value)}`).toBe(new URL(value).href);
      expect(normaliseWebhookUrl(href), `seed ${seed}: ${href}`).toBe(href);
      accepted++;
    }
    expect(accepted, `seed ${seed}`).toBeGreaterThan(500); // both outcomes are exercised
  });
});
