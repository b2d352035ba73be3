// Jest globalTeardown: stops the containers ./global-setup.js started (none without Docker).
const { stopTestInfrastructure } = require('./containers');

module.exports = async function globalTeardown() {
  await stopTestInfrastructure();
};
