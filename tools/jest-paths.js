const path = require('path');
const { compilerOptions } = require('../tsconfig.base.json');
exports.pathsToModuleNameMapper = () => {
  const map = {};
  for (const [alias, [target]] of Object.entries(compilerOptions.paths)) {
    map[`^${alias.replace('/', '\\/')}$`] = path.join(__dirname, '..', target, 'index.ts');
  }
  return map;
};
