import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

// Encryption at rest of the shared signing key (OAUTH_KEY_ENCRYPTION_KEY): AES-256-GCM with a
// random 96-bit nonce, the key's kid as additional authenticated data (a ciphertext copied to
// another row does not decrypt), stored as one blob: version (1) | nonce (12) | tag (16) | ciphertext.
// Each row names the encryption key by its id (a hash of the key, not the key), so the key can be
// rotated: OAUTH_KEY_ENCRYPTION_KEYS_PREVIOUS decrypts what an older key encrypted.

export type KeyEncryptionKey = { id: string; key: Buffer };

const formatVersion = 1;
const nonceBytes = 12;
const tagBytes = 16;
const base64Key = /^(?:[A-Za-z0-9+/]{43}=?|[A-Za-z0-9_-]{43})$/;

export class KeyDecryptionError extends Error {}

/** The id stored with each encrypted row: the first 16 hex digits of a SHA-256 of the key. */
export const keyEncryptionKeyId = (key: Buffer): string =>
  createHash('sha256').update('connect-oauth-kek:').update(key).digest('hex').slice(0, 16);

/**
 * Parses one base64 (or base64url) key of exactly 32 bytes; throws an Error naming the variable,
 * never its value.
 */
export function parseKeyEncryptionKey(value: string, variable: string): KeyEncryptionKey {
  const text = value.trim();
  const key = base64Key.test(text) ? Buffer.from(text, 'base64') : null; // Node's base64 takes base64url too
  if (!key || key.length !== 32) {
    throw new Error(
      `invalid configuration: ${variable}: must be 32 random bytes, base64-encoded (e.g. openssl rand -base64 32)`,
    );
  }
  return { id: keyEncryptionKeyId(key), key };
}

/** OAUTH_KEY_ENCRYPTION_KEYS_PREVIOUS: comma-separated keys, each as parseKeyEncryptionKey. */
export const parseKeyEncryptionKeys = (value: string, variable: string): KeyEncryptionKey[] =>
  value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map((s) => parseKeyEncryptionKey(s, variable));

const aad = (kid: string) => Buffer.from(`connect-oauth-signing-key:${kid}`, 'utf8');

export function encryptPrivateKey(kek: KeyEncryptionKey, kid: string, pkcs8Der: Buffer): Buffer {
  const nonce = randomBytes(nonceBytes);
  const cipher = createCipheriv('aes-256-gcm', kek.key, nonce, { authTagLength: tagBytes });
  cipher.setAAD(aad(kid));
  const ciphertext = Buffer.concat([cipher.update(pkcs8Der), cipher.final()]);
  return Buffer.concat([Buffer.from([formatVersion]), nonce, cipher.getAuthTag(), ciphertext]);
}

/** The PKCS#8 DER the blob holds; KeyDecryptionError when the key is wrong or the blob was altered. */
export function decryptPrivateKey(kek: KeyEncryptionKey, kid: string, blob: Buffer): Buffer {
  if (blob.length <= 1 + nonceBytes + tagBytes || blob[0] !== formatVersion) {
    throw new KeyDecryptionError(`the stored key ${kid} is not in a known encrypted format`);
  }
  const nonce = blob.subarray(1, 1 + nonceBytes);
  const tag = blob.subarray(1 + nonceBytes, 1 + nonceBytes + tagBytes);
  try {
    const decipher = createDecipheriv('aes-256-gcm', kek.key, nonce, { authTagLength: tagBytes });
    decipher.setAAD(aad(kid));
    decipher.setAuthTag(tag);
    return Buffer.concat([decipher.update(blob.subarray(1 + nonceBytes + tagBytes)), decipher.final()]);
  } catch {
    throw new KeyDecryptionError(
      `the stored key ${kid} does not decrypt with encryption key ${kek.id} (wrong key, or the row was altered)`,
    );
  }
}
