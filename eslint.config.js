// Lint: typescript-eslint's recommended rules; `npm run lint` fails on any warning.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', '.state/', '.test-build-*/', 'coverage/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      // Test and SQL-row code reads untyped JSON and rows on purpose.
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    // kafkajs's values come through src/shared/kafka/kafkajs.ts, which mends its produce path first.
    files: ['src/**/*.ts'],
    ignores: ['src/shared/kafka/kafkajs.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        { paths: [{ name: 'kafkajs', message: 'Import from src/shared/kafka/kafkajs.ts.', allowTypeImports: true }] },
      ],
    },
  },
);
