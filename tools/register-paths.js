// Resolves the workspace's @loyalty/* aliases against the compiled tree in dist/ at run time.
const path = require('path');
const { register } = require('tsconfig-paths');
const { compilerOptions } = require('../tsconfig.base.json');
register({ baseUrl: path.join(__dirname, '..', 'dist'), paths: compilerOptions.paths });
