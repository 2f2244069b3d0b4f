// Parse Cypher statements with Neo4j's own parser (@neo4j-cypher/language-support).
// Input: a JSON array of strings on stdin. Output: a JSON array of {index, statement, errors}.
import { lintCypherQuery, isNotParamError } from '@neo4j-cypher/language-support';

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
