// A stdio MCP server whose one tool asks the client a question with a hostile schema:
// objects nested `levels` deep (default 50: the request's JSON nests over 100 levels;
// MCP's form allows an object of primitive fields). Built
// on the official TypeScript SDK's low-level `Server` (npm `@modelcontextprotocol/sdk`,
// installed by the test support), which sends the request as it is given:
//
//     NODE_PATH=PREFIX/node_modules node deep_elicitation.mjs
//
// The tool's result says what the client answered, or how the request failed.
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const nodeModules = (process.env.NODE_PATH || '').split(':')[0];
const sdk = (rel) => import(pathToFileURL(join(nodeModules, '@modelcontextprotocol', 'sdk', 'dist', 'esm', rel)).href);
const { Server } = await sdk('server/index.js');
const { StdioServerTransport } = await sdk('server/stdio.js');
const { CallToolRequestSchema, ElicitResultSchema, ListToolsRequestSchema } = await sdk('types.js');

const server = new Server({ name: 'deep-elicitation', version: '1.0.0' }, { capabilities: { tools: {} } });
server.setRequestHandler(ListToolsRequestSchema, async () => ({
  tools: [{ name: 'ask_deep', description: 'Asks with a deeply nested schema.', inputSchema: { type: 'object', properties: { levels: { type: 'integer' } } } }],
}));
server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
  const levels = request.params.arguments?.levels ?? 50;
  let schema = { type: 'string' };
  for (let i = 0; i < levels; i++) schema = { type: 'object', properties: { a: schema } };
  try {
    const answer = await extra.sendRequest(
      { method: 'elicitation/create', params: { message: 'How deep?', requestedSchema: schema } },
      ElicitResultSchema,
    );
    return { content: [{ type: 'text', text: 'answered: ' + JSON.stringify(answer) }] };
  } catch (e) {
    return { content: [{ type: 'text', text: 'the question failed: ' + e.message }], isError: true };
  }
});
await server.connect(new StdioServerTransport());
