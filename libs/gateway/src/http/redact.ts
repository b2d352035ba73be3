/**
 * Removes personal data from a request URL before it is stored or logged (see @loyalty/platform
 * redactUrl): erasure must reach every place a read can, so identifiers never enter logs or the
 * rejected-call list, whatever their encoding.
 */
export { redactUrl } from '@loyalty/platform';
