/** The JSON value of a text, or the text itself when it is not JSON (a cell, an answer's body). */
export function jsonOrText(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
