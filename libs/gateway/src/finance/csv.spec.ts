import { csvField, csvLine } from './csv';

describe('RFC 4180 CSV', () => {
  it('leaves plain fields alone and renders null as empty', () => {
    expect(csvLine(['LE-1', -250, null, undefined, 'earn'])).toBe('LE-1,-250,,,earn\r\n');
  });

  it('quotes commas, quotes and line breaks, doubling quotes', () => {
    expect(csvField('a,b')).toBe('"a,b"');
    expect(csvField('say "hi"')).toBe('"say ""hi"""');
    expect(csvField('line\nbreak')).toBe('"line\nbreak"');
    expect(csvField('cr\rhere')).toBe('"cr\rhere"');
  });
});
