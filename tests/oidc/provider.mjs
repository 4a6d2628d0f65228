// A real OpenID Provider for the e2e tests: npm `oidc-provider` (a
// certified OP), issuing JWT access tokens by the client-credentials grant
// for the resource `https://strata.example/api`, with a `groups` claim and an email, signed
// with the RSA keys of a key file this script also writes.
//
//   node provider.mjs keygen KEYS_FILE PEM_FILE   adds a new RSA key (first:
//                                                 it signs from then on) and
//                                                 writes its private PEM
//   node provider.mjs serve MODULES_DIR PORT KEYS_FILE
//
// Clients (client_secret_post): alice (groups dba), bob (groups release),
// viola (groups eng); each secret is `<id>-secret`.
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

const [mode, ...rest] = process.argv.slice(2);

if (mode === 'keygen') {
  const [keysFile, pemFile] = rest;
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const jwk = { ...privateKey.export({ format: 'jwk' }), kid: randomUUID(), alg: 'RS256', use: 'sig' };
  const keys = existsSync(keysFile) ? JSON.parse(readFileSync(keysFile, 'utf8')) : { keys: [] };
  keys.keys.unshift(jwk);
  writeFileSync(keysFile, JSON.stringify(keys));
  writeFileSync(pemFile, privateKey.export({ format: 'pem', type: 'pkcs8' }));
  console.log(jwk.kid);
} else if (mode === 'serve') {
  const [modules, port, keysFile] = rest;
  const { default: Provider } = await import(pathToFileURL(`${modules}/oidc-provider/lib/index.js`).href);
  const groups = { alice: ['dba'], bob: ['release'], viola: ['eng'] };
  const client = (id) => ({
    client_id: id,
    client_secret: `${id}-secret`,
    grant_types: ['client_credentials'],
    redirect_uris: [],
    response_types: [],
    token_endpoint_auth_method: 'client_secret_post',
  });
  const provider = new Provider(`http://127.0.0.1:${port}`, {
    jwks: JSON.parse(readFileSync(keysFile, 'utf8')),
    clients: Object.keys(groups).map(client),
    features: {
      clientCredentials: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => 'https://strata.example/api',
        useGrantedResource: () => true,
        getResourceServerInfo: () => ({
          scope: 'api',
          audience: 'https://strata.example/api',
          accessTokenFormat: 'jwt',
          accessTokenTTL: 300,
          jwt: { sign: { alg: 'RS256' } },
        }),
      },
    },
    extraTokenClaims: (ctx, token) => ({ groups: groups[token.clientId] ?? [], email: `${token.clientId}@example.com` }),
  });
  provider.listen(Number(port), '127.0.0.1', () => console.log(`listening ${port}`));
} else {
  console.error('usage: provider.mjs keygen KEYS PEM | serve MODULES PORT KEYS');
  process.exit(2);
}
