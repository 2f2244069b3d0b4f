// Parse Cypher statements with Neo4j's own parser (@neo4j-cypher/language-support).
// Usage: node lint.mjs <directory whose node_modules holds the package> (tests/node_tools.py finds it).
// Input: a JSON array of strings on stdin. Output: a JSON array of {index, statement, errors}.
import { createRequire } from 'node:module';
import { join } from 'node:path';

const require = createRequire(join(process.argv[2], 'package.json'));
const { lintCypherQuery, isNotParamError } = require('@neo4j-cypher/language-support');

let input = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk) => { input += chunk; });
process.stdin.on('end', () => {
  const statements = JSON.parse(input);
  const report = statements.map((statement, index) => {
    const { diagnostics } = lintCypherQuery(statement, {});
    const errors = diagnostics
      .filter((d) => d.severity === 1 && isNotParamError(d))
      .map((d) => d.message);
    return { index, statement, errors };
  });
  process.stdout.write(JSON.stringify(report));
});
