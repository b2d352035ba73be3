/**
 * Removes personal data from a request URL before it is stored or logged: member ids given as
 * `ref:<external_ref>` or `phone:<number>` and the `email` query filter. Erasure must reach
 * every place a read can, so identifiers never enter logs or the rejected-call list.
 */
export const redactUrl = (url: string): string =>
  url
    .replace(/\/(ref|phone):[^/?#]*/gi, '/$1:[redacted]')
    .replace(/([?&](?:email|phone|external_ref)=)[^&#]*/gi, '$1[redacted]');
