import 'reflect-metadata';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { apiArtefacts } from './openapi';

// `npm run api:generate`, step 1: writes libs/sdk/openapi.json and docs/errors.md (then openapi-typescript writes the SDK types).
const root = join(__dirname, '..', '..', '..', '..');
apiArtefacts()
  .then((files) => {
    for (const [path, text] of Object.entries(files)) {
      writeFileSync(join(root, path), text);
      process.stdout.write(`wrote ${path}\n`);
    }
  })
  .catch((e) => { process.stderr.write(`${(e as Error).stack}\n`); process.exit(1); });
