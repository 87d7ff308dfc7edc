// ESLint with typescript-eslint's recommended rules over the sources, tests, scripts and benchmarks,
// run by `npm test` (npm run lint). The import layering is dependency-cruiser's (.dependency-cruiser.cjs).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import globals from 'globals';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

export default tseslint.config(
  { ignores: ['build/', 'dist/', 'node_modules/', 'crds/', '.check-gpu/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  { linterOptions: { reportUnusedDisableDirectives: 'error' } },
  // Plain JavaScript here runs on Node.js (the bundle script, test doubles of node binaries).
  { files: ['**/*.js', '**/*.cjs', '**/*.mjs'], languageOptions: { globals: globals.node, sourceType: 'commonjs' }, rules: { '@typescript-eslint/no-require-imports': 'off' } },
  // Tests read JSON of the API server as it comes, and load programs (README blocks, fixtures) at run time.
  { files: ['test/**/*.ts', 'bench/**/*.ts', 'scripts/**/*.ts'], rules: { '@typescript-eslint/no-explicit-any': 'off', '@typescript-eslint/no-require-imports': 'off' } },
  // Output goes through the logger (the runtime) or a test's assertions; scripts and benchmarks print.
  { files: ['lib/**', 'components/**', 'test/**'], rules: { 'no-console': 'error' } },
  // With type information over the product code: the runtime is full of async loops, and a promise
  // that nobody awaits or catches fails silently.
  {
    files: ['lib/**/*.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: dirname(fileURLToPath(import.meta.url)) } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/await-thenable': 'error',
      '@typescript-eslint/only-throw-error': 'error',
      '@typescript-eslint/no-for-in-array': 'error',
      '@typescript-eslint/no-implied-eval': 'error',
    },
  },
  { rules: { '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }] } },
);
