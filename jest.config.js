/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  // Type checking runs once in `npm run typecheck`; jest only transpiles, which keeps the suite fast.
  transform: { '^.+\\.ts$': ['ts-jest', {}] },
  globalSetup: '<rootDir>/test/global-setup.js',
  testTimeout: 30000,
};
