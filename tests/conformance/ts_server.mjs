// A two-round tool on the TypeScript SDK v2 (@modelcontextprotocol/server 2.4.0), over stdio, for the
// probe (scripts/conformance.py). Written here, after the SDK's examples/mrtr/server.ts.
//
//   node ts_server.mjs codec   the state sealed by the SDK's createRequestStateCodec (HMAC, ttl 600 s),
//                              its verify in ServerOptions.requestState, as the SDK documents it
//   node ts_server.mjs plain   no codec: the SDK applies none of its own, so the state is the plain
//                              JSON the handler writes (the server broken on purpose)
import { acceptedContent, createRequestStateCodec, inputRequired, McpServer } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import * as z from 'zod/v4';

const variant = process.argv[2];
if (variant !== 'codec' && variant !== 'plain') {
    console.error('usage: node ts_server.mjs codec|plain');
    process.exit(2);
}

// One process serves every round, so a per-process key is enough (as in the SDK's example).
const codec = variant === 'codec' ? createRequestStateCodec({ key: crypto.getRandomValues(new Uint8Array(32)), ttlSeconds: 600 }) : undefined;

const DATE_SCHEMA = { type: 'object', properties: { date: { type: 'string' } }, required: ['date'] };

function buildServer() {
    const server = new McpServer(
        { name: 'ts-booking', version: '1.0.0' },
        { capabilities: { tools: {} }, ...(codec === undefined ? {} : { requestState: { verify: codec.verify } }) }
    );
    server.registerTool(
        'book_table',
        { description: 'Book a table: asks for the date, then books.', inputSchema: z.object({ restaurant: z.string() }) },
        async ({ restaurant }, ctx) => {
            // The payload the codec's verify resolved with, or without a codec the wire string as sent.
            const echoed = ctx.mcpReq.requestState();
            const state = codec === undefined && echoed !== undefined ? JSON.parse(echoed) : echoed;
            const answer = acceptedContent(ctx.mcpReq.inputResponses, 'date');
            if (state === undefined || typeof answer?.date !== 'string') {
                return inputRequired({
                    inputRequests: { date: inputRequired.elicit({ message: `Which date at ${restaurant}?`, requestedSchema: DATE_SCHEMA }) },
                    requestState: codec === undefined ? JSON.stringify({ step: 'date', restaurant }) : await codec.mint({ step: 'date', restaurant })
                });
            }
            return { content: [{ type: 'text', text: `booked ${state.restaurant} on ${answer.date}` }] };
        }
    );
    return server;
}

serveStdio(buildServer);
