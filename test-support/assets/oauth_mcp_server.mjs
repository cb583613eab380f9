// An MCP server behind OAuth 2.1 for loopback tests, built on the official TypeScript SDK
// (npm `@modelcontextprotocol/sdk`, 1.32.2, installed by the test support: see
// `test-support/src/npm.rs` and `test-support/src/oauth.rs`, which starts this file).
//
// Unlike the SDK's example server (whose demo provider issues no refresh tokens), its
// authorization server issues short-lived access tokens with refresh tokens, rotated at
// each refresh, and a test can revoke every grant and make the server misbehave on purpose.
//
// Run:
//
//     NODE_PATH=PREFIX/node_modules MCP_PORT=3000 MCP_AUTH_PORT=3001 node oauth_mcp_server.mjs
//
// where PREFIX is the folder `ensure_npm_package("@modelcontextprotocol/sdk", "1.32.2")`
// returns. Node ignores NODE_PATH for the `import` of an ES module, so this file reads it
// itself: it imports the SDK's modules (`@modelcontextprotocol/sdk/dist/esm/...`) and the
// SDK's own copy of express by absolute path from the first NODE_PATH entry that holds the
// SDK (express must be that copy: the SDK's routers are mounted on our express apps).
//
// Two servers, each on 127.0.0.1 and, when this machine has IPv6, on [::1] (the URLs say
// `localhost`):
//
// - the authorization server on MCP_AUTH_PORT, issuer `http://localhost:MCP_AUTH_PORT/`: the
//   SDK's `mcpAuthRouter` (metadata at `/.well-known/oauth-authorization-server`, dynamic
//   client registration at `/register`, `/authorize` approving at once with a 302 to the
//   redirect URI with `code` and `state`, `/token` checking PKCE S256, `/revoke`) over an
//   in-memory provider of this file; the SDK's rate limits are off;
// - the MCP server on MCP_PORT: streamable HTTP at `/mcp` (`http://localhost:MCP_PORT/mcp`)
//   behind the SDK's `requireBearerAuth`, whose 401 carries `WWW-Authenticate: Bearer
//   error="invalid_token", error_description="...",
//   resource_metadata="http://localhost:MCP_PORT/.well-known/oauth-protected-resource/mcp"`;
//   that document (RFC 9728) names the resource `http://localhost:MCP_PORT/mcp` and the
//   authorization server. Tools: `whoami` (text `call N by CLIENT_ID`, N counting every
//   whoami call since start) and `echo` {text} (the text back).
//
// Tokens: an access token lives ACCESS_TTL seconds (`expires_in`); a refresh token lives
// until it is used (then a new one replaces it: the old one is refused), or revoked. An
// authorization code is single-use and lives 10 minutes. The `resource` parameter (RFC
// 8707) is accepted on /authorize and /token; when given it must name the MCP server's URL
// (a trailing slash aside), else `invalid_target`. Unknown, expired or revoked refresh
// tokens and codes: `invalid_grant` (400). Unknown, expired or revoked access tokens: 401
// `invalid_token` with the `error_description` "Unknown token", "Token has expired" or
// "Token was revoked".
//
// Environment:
//
// - MCP_PORT, MCP_AUTH_PORT: the two ports (defaults 3000 and 3001);
// - ACCESS_TTL: an access token's lifetime in seconds (default 3600);
// - MISBEHAVE: empty (none) or one of
//   - `foreign-metadata`: the protected-resource metadata names the authorization server
//     `http://127.0.0.2:MCP_AUTH_PORT/`, an origin other than the `localhost` one the client
//     used (another host: another loopback address). The authorization server also listens
//     there (Linux routes all of 127/8 to loopback), with metadata whose issuer and
//     endpoints are on `http://127.0.0.2:MCP_AUTH_PORT`, and the same provider: a client that
//     follows it can log in (the stats show whether it did). The SDK only takes a plain-HTTP
//     issuer on `localhost` or `127.0.0.1`, so in this mode the file sets
//     MCP_DANGEROUSLY_ALLOW_INSECURE_ISSUER_URL=1 (the SDK warns once on stderr);
//   - `huge-token`: the token endpoint answers 200 with a well-formed token response of
//     about 100 KB (a 100,000-character access token; the refresh token is ordinary), for
//     codes and refreshes alike; such a token is valid, and the MCP server takes request
//     headers up to 256 KiB in this mode (node's default is 16 KiB) so that it can be sent;
//   - `http-auth-server`: the authorization-server metadata (still served at
//     `http://localhost:MCP_AUTH_PORT/.well-known/oauth-authorization-server`, issuer
//     `http://localhost:MCP_AUTH_PORT/`) names its endpoints on plain HTTP beyond loopback:
//     `http://auth.example.test:MCP_AUTH_PORT/authorize`, `/token`, `/register`, `/revoke`
//     (`.test` never resolves).
//
// Test controls on the authorization server's port (no auth, JSON):
//
// - `POST /test/revoke`: every access token, refresh token and pending code is revoked
//   (the next MCP request answers 401, a refresh `invalid_grant`); registered clients stay;
// - `POST /test/expire`: every access token expires now (refresh tokens stay good);
// - `GET /test/stats`: counts since start, as JSON:
//   - `authorization_codes`: authorization codes exchanged for tokens;
//   - `refreshes`: refresh grants answered with new tokens;
//   - `refreshes_refused`: refresh grants refused (`invalid_grant`, `invalid_target`);
//   - `registrations`: clients registered (dynamic client registration);
//   - `mcp_requests_with_token`: requests to /mcp carrying `Authorization: Bearer`, valid
//     or not (a request whose headers node refuses, 431, is not seen);
//   - `mcp_requests_refused`: requests to /mcp answered 401 or 403.
//
// Stdout: `auth listening on port N`, then `mcp listening on port N`, and nothing else;
// everything else goes to stderr.

import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { createServer } from 'node:http';
import { delimiter, join } from 'node:path';
import { pathToFileURL } from 'node:url';

const MISBEHAVIOURS = ['', 'foreign-metadata', 'huge-token', 'http-auth-server'];
const MISBEHAVE = process.env.MISBEHAVE ?? '';
if (!MISBEHAVIOURS.includes(MISBEHAVE)) {
    const known = MISBEHAVIOURS.map(m => JSON.stringify(m)).join(', ');
    console.error(`MISBEHAVE must be one of ${known}, not ${JSON.stringify(MISBEHAVE)}`);
    process.exit(2);
}
const MCP_PORT = Number(process.env.MCP_PORT ?? 3000);
const AUTH_PORT = Number(process.env.MCP_AUTH_PORT ?? 3001);
const ACCESS_TTL = Number(process.env.ACCESS_TTL || 3600);
if (!(ACCESS_TTL > 0)) {
    console.error(`ACCESS_TTL must be a positive number of seconds, not ${process.env.ACCESS_TTL}`);
    process.exit(2);
}
const CODE_TTL_MS = 10 * 60 * 1000;

// The node_modules folder that holds the SDK.
const nodeModules = (process.env.NODE_PATH ?? '')
    .split(delimiter)
    .find(dir => dir && existsSync(join(dir, '@modelcontextprotocol', 'sdk', 'package.json')));
if (!nodeModules) {
    console.error('NODE_PATH must name the node_modules folder that holds @modelcontextprotocol/sdk');
    process.exit(2);
}
// Read by the SDK's router module when it loads: set before the imports below.
if (MISBEHAVE === 'foreign-metadata') {
    process.env.MCP_DANGEROUSLY_ALLOW_INSECURE_ISSUER_URL = '1';
}
const load = rel => import(pathToFileURL(join(nodeModules, rel)).href);
const sdk = rel => load(join('@modelcontextprotocol', 'sdk', 'dist', 'esm', rel));

const { default: express } = await load(join('express', 'index.js'));
const { mcpAuthRouter, mcpAuthMetadataRouter, createOAuthMetadata, getOAuthProtectedResourceMetadataUrl } =
    await sdk('server/auth/router.js');
const { requireBearerAuth } = await sdk('server/auth/middleware/bearerAuth.js');
const { InvalidGrantError, InvalidTargetError, InvalidTokenError } = await sdk('server/auth/errors.js');
const { Server } = await sdk('server/index.js');
const { StreamableHTTPServerTransport } = await sdk('server/streamableHttp.js');
const { createMcpExpressApp } = await sdk('server/express.js');
const { CallToolRequestSchema, ListToolsRequestSchema, isInitializeRequest } = await sdk('types.js');

const mcpUrl = new URL(`http://localhost:${MCP_PORT}/mcp`);
const issuerUrl = new URL(`http://localhost:${AUTH_PORT}`);
const foreignIssuerUrl = new URL(`http://127.0.0.2:${AUTH_PORT}`);
const outsideBaseUrl = new URL(`http://auth.example.test:${AUTH_PORT}`);

const stats = {
    authorization_codes: 0,
    refreshes: 0,
    refreshes_refused: 0,
    registrations: 0,
    mcp_requests_with_token: 0,
    mcp_requests_refused: 0
};

// A token's text: 43 random characters, or 100,000 for an access token under `huge-token`.
const newToken = (huge = false) => randomBytes(huge ? 75_000 : 32).toString('base64url');

// The URL without its fragment and one trailing slash, to compare resources.
const comparable = url => {
    const text = String(url);
    const hash = text.indexOf('#');
    return (hash === -1 ? text : text.slice(0, hash)).replace(/\/$/, '');
};
const checkResource = resource => {
    if (resource !== undefined && comparable(resource) !== comparable(mcpUrl)) {
        throw new InvalidTargetError(`this server issues tokens for ${mcpUrl.href} only, not ${resource}`);
    }
};

class ClientsStore {
    clients = new Map();
    async getClient(clientId) {
        return this.clients.get(clientId);
    }
    async registerClient(client) {
        this.clients.set(client.client_id, client);
        stats.registrations++;
        return client;
    }
}

class Provider {
    clientsStore = new ClientsStore();
    codes = new Map(); // code -> {clientId, params, expiresAt}
    accessTokens = new Map(); // token -> {clientId, scopes, resource, expiresAt (ms), revoked}
    refreshTokens = new Map(); // token -> {clientId, scopes, resource, revoked}

    async authorize(client, params, res) {
        // The SDK's handler has checked the client and its redirect URI (any port on loopback).
        checkResource(params.resource);
        const code = randomUUID();
        this.codes.set(code, { clientId: client.client_id, params, expiresAt: Date.now() + CODE_TTL_MS });
        const target = new URL(params.redirectUri);
        target.searchParams.set('code', code);
        if (params.state !== undefined) {
            target.searchParams.set('state', params.state);
        }
        res.redirect(302, target.href);
    }

    // The code's record, or invalid_grant.
    code(client, code) {
        const data = this.codes.get(code);
        if (!data || data.expiresAt < Date.now()) {
            throw new InvalidGrantError('unknown, used or expired authorization code');
        }
        if (data.clientId !== client.client_id) {
            throw new InvalidGrantError('the authorization code was issued to another client');
        }
        return data;
    }

    async challengeForAuthorizationCode(client, code) {
        return this.code(client, code).params.codeChallenge;
    }

    async exchangeAuthorizationCode(client, code, _verifier, redirectUri, resource) {
        const data = this.code(client, code);
        this.codes.delete(code);
        if (redirectUri !== undefined && redirectUri !== data.params.redirectUri) {
            throw new InvalidGrantError('redirect_uri differs from the one of the authorization request');
        }
        checkResource(resource);
        stats.authorization_codes++;
        return this.grant(client.client_id, data.params.scopes ?? [], resource ?? data.params.resource);
    }

    async exchangeRefreshToken(client, refreshToken, scopes, resource) {
        const data = this.refreshTokens.get(refreshToken);
        let reason;
        if (!data) {
            reason = 'unknown or already used refresh token';
        } else if (data.revoked) {
            reason = 'the refresh token was revoked';
        } else if (data.clientId !== client.client_id) {
            reason = 'the refresh token was issued to another client';
        } else if (scopes && !scopes.every(s => data.scopes.includes(s))) {
            reason = 'scope beyond the original grant';
        }
        if (reason) {
            stats.refreshes_refused++;
            throw new InvalidGrantError(reason);
        }
        try {
            checkResource(resource);
        } catch (error) {
            stats.refreshes_refused++;
            throw error;
        }
        // Rotation: the refresh token used is gone.
        this.refreshTokens.delete(refreshToken);
        stats.refreshes++;
        return this.grant(client.client_id, scopes ?? data.scopes, resource ?? data.resource);
    }

    grant(clientId, scopes, resource) {
        const access = newToken(MISBEHAVE === 'huge-token');
        const refresh = newToken();
        const expiresAt = Date.now() + ACCESS_TTL * 1000;
        this.accessTokens.set(access, { clientId, scopes, resource, expiresAt });
        this.refreshTokens.set(refresh, { clientId, scopes, resource });
        return {
            access_token: access,
            token_type: 'bearer',
            expires_in: ACCESS_TTL,
            refresh_token: refresh,
            scope: scopes.join(' ')
        };
    }

    async verifyAccessToken(token) {
        // Errors other than the SDK's OAuth errors become 500 in requireBearerAuth.
        const data = this.accessTokens.get(token);
        if (!data) throw new InvalidTokenError('Unknown token');
        if (data.revoked) throw new InvalidTokenError('Token was revoked');
        if (data.expiresAt <= Date.now()) throw new InvalidTokenError('Token has expired');
        return {
            token,
            clientId: data.clientId,
            scopes: data.scopes,
            expiresAt: Math.floor(data.expiresAt / 1000),
            resource: data.resource ? new URL(data.resource) : undefined
        };
    }

    // RFC 7009, through the SDK's /revoke.
    async revokeToken(client, { token }) {
        for (const map of [this.accessTokens, this.refreshTokens]) {
            const data = map.get(token);
            if (data && data.clientId === client.client_id) data.revoked = true;
        }
    }

    revokeAll() {
        for (const map of [this.accessTokens, this.refreshTokens]) {
            for (const data of map.values()) data.revoked = true;
        }
        this.codes.clear();
    }

    expireAll() {
        const now = Date.now();
        for (const data of this.accessTokens.values()) data.expiresAt = Math.min(data.expiresAt, now);
    }
}

const provider = new Provider();
const noRateLimit = {
    authorizationOptions: { rateLimit: false },
    tokenOptions: { rateLimit: false },
    clientRegistrationOptions: { rateLimit: false },
    revocationOptions: { rateLimit: false }
};

// Listens on 127.0.0.1 (or `host`) and, best effort, on [::1]; resolves once the first listens.
function listen(app, port, name, host = '127.0.0.1', options = {}) {
    const extra = host === '127.0.0.1' ? ['::1'] : [];
    return new Promise((resolve, reject) => {
        const server = createServer(options, app);
        server.once('error', reject);
        server.listen(port, host, () => {
            for (const other of extra) {
                const more = createServer(options, app);
                more.once('error', e =>
                    console.error(`${name}: not listening on [${other}]:${port}: ${e.code ?? e.message}`)
                );
                more.listen(port, other);
            }
            resolve();
        });
    });
}

// --- The authorization server --------------------------------------------------------

const authApp = express();
authApp.post('/test/revoke', (_req, res) => {
    provider.revokeAll();
    res.json({ revoked: true });
});
authApp.post('/test/expire', (_req, res) => {
    provider.expireAll();
    res.json({ expired: true });
});
authApp.get('/test/stats', (_req, res) => res.json(stats));
authApp.use(
    mcpAuthRouter({
        provider,
        issuerUrl,
        // Under `http-auth-server` the metadata names the endpoints on this base instead.
        baseUrl: MISBEHAVE === 'http-auth-server' ? outsideBaseUrl : undefined,
        resourceServerUrl: mcpUrl,
        scopesSupported: ['mcp:tools'],
        ...noRateLimit
    })
);

let foreignApp;
if (MISBEHAVE === 'foreign-metadata') {
    foreignApp = express();
    foreignApp.use(
        mcpAuthRouter({
            provider,
            issuerUrl: foreignIssuerUrl,
            resourceServerUrl: mcpUrl,
            scopesSupported: ['mcp:tools'],
            ...noRateLimit
        })
    );
}

// --- The MCP server ----------------------------------------------------------------------

let whoamiCalls = 0;
const tools = [
    {
        name: 'whoami',
        description: 'Names the client whose access token made the call, and counts the calls.',
        inputSchema: { type: 'object', properties: {} }
    },
    {
        name: 'echo',
        description: 'Answers with the text it was given.',
        inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] }
    }
];

function mcpServer() {
    const server = new Server(
        { name: 'harnessx-oauth-test-server', version: '1.0.0' },
        { capabilities: { tools: {} } }
    );
    server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools }));
    server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
        const { name, arguments: args = {} } = request.params;
        if (name === 'whoami') {
            whoamiCalls++;
            const text = `call ${whoamiCalls} by ${extra.authInfo?.clientId ?? 'nobody'}`;
            return { content: [{ type: 'text', text }] };
        }
        if (name === 'echo') {
            if (typeof args.text !== 'string') {
                return { content: [{ type: 'text', text: 'echo needs {"text": string}' }], isError: true };
            }
            return { content: [{ type: 'text', text: args.text }] };
        }
        return { content: [{ type: 'text', text: `no tool named ${name}` }], isError: true };
    });
    return server;
}

const mcpApp = createMcpExpressApp();
const advertised =
    MISBEHAVE === 'foreign-metadata'
        ? createOAuthMetadata({ provider, issuerUrl: foreignIssuerUrl, scopesSupported: ['mcp:tools'] })
        : createOAuthMetadata({
              provider,
              issuerUrl,
              baseUrl: MISBEHAVE === 'http-auth-server' ? outsideBaseUrl : undefined,
              scopesSupported: ['mcp:tools']
          });
mcpApp.use(
    mcpAuthMetadataRouter({
        oauthMetadata: advertised,
        resourceServerUrl: mcpUrl,
        scopesSupported: ['mcp:tools'],
        resourceName: 'harnessx OAuth test server'
    })
);
const counting = (req, res, next) => {
    if (/^bearer /i.test(req.headers.authorization ?? '')) stats.mcp_requests_with_token++;
    res.on('finish', () => {
        if (res.statusCode === 401 || res.statusCode === 403) stats.mcp_requests_refused++;
    });
    next();
};
const bearer = requireBearerAuth({
    verifier: provider,
    resourceMetadataUrl: getOAuthProtectedResourceMetadataUrl(mcpUrl)
});

const transports = new Map(); // session id -> transport
const noSession = (res, status, message) =>
    res.status(status).json({
        jsonrpc: '2.0',
        error: { code: status === 404 ? -32001 : -32000, message },
        id: null
    });

mcpApp.post('/mcp', counting, bearer, async (req, res) => {
    try {
        const sessionId = req.headers['mcp-session-id'];
        if (sessionId) {
            const transport = transports.get(sessionId);
            if (!transport) return noSession(res, 404, 'Session not found');
            return await transport.handleRequest(req, res, req.body);
        }
        if (!isInitializeRequest(req.body)) {
            return noSession(res, 400, 'Bad Request: No valid session ID provided');
        }
        const transport = new StreamableHTTPServerTransport({
            sessionIdGenerator: () => randomUUID(),
            onsessioninitialized: id => transports.set(id, transport)
        });
        transport.onclose = () => {
            if (transport.sessionId) transports.delete(transport.sessionId);
        };
        await mcpServer().connect(transport);
        await transport.handleRequest(req, res, req.body);
    } catch (error) {
        console.error('handling an MCP request:', error);
        if (!res.headersSent) {
            const error = { code: -32603, message: 'Internal server error' };
            res.status(500).json({ jsonrpc: '2.0', error, id: null });
        }
    }
});
const sessionRequest = async (req, res) => {
    const sessionId = req.headers['mcp-session-id'];
    if (!sessionId) return void res.status(400).send('Missing session ID');
    const transport = transports.get(sessionId);
    if (!transport) return noSession(res, 404, 'Session not found');
    try {
        await transport.handleRequest(req, res);
    } catch (error) {
        console.error('handling an MCP request:', error);
        if (!res.headersSent) res.status(500).send('Internal server error');
    }
};
mcpApp.get('/mcp', counting, bearer, sessionRequest);
mcpApp.delete('/mcp', counting, bearer, sessionRequest);

// --- Start -------------------------------------------------------------------------------

try {
    await listen(authApp, AUTH_PORT, 'auth');
    if (foreignApp) {
        await listen(foreignApp, AUTH_PORT, 'foreign auth', foreignIssuerUrl.hostname).catch(e =>
            console.error(`foreign auth: not listening on ${foreignIssuerUrl.host}: ${e.code ?? e.message}`)
        );
    }
    console.log(`auth listening on port ${AUTH_PORT}`);
    const headers = MISBEHAVE === 'huge-token' ? { maxHeaderSize: 256 * 1024 } : {};
    await listen(mcpApp, MCP_PORT, 'mcp', '127.0.0.1', headers);
    console.log(`mcp listening on port ${MCP_PORT}`);
} catch (error) {
    console.error(`failed to listen: ${error.code ?? ''} ${error.message}`);
    process.exit(1);
}
