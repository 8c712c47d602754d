// A real OpenID Provider for the sign-in tests (npm `oidc-provider`, a certified implementation),
// on loopback. Configured by the test harness through the environment:
//   PORT      the port to listen on (issuer: http://127.0.0.1:PORT)
//   CLIENTS   JSON array of client metadata (client_id, redirect_uris, …)
//   SCOPES    extra scopes to accept, space separated (e.g. Zitadel's org scope)
// Accounts: the login name is the account id and the subject; any password is accepted (dev
// interactions).
import Provider from 'oidc-provider';

const port = Number(process.env.PORT);
const issuer = `http://127.0.0.1:${port}`;
const clients = JSON.parse(process.env.CLIENTS ?? '[]');
const extraScopes = (process.env.SCOPES ?? '').split(' ').filter(Boolean);

const accounts = {
  ana: { email: 'ana@example.com', email_verified: true, name: 'Ana Operator', groups: ['platform-ops'] },
  otto: { email: 'otto@acme.test', email_verified: true, name: 'Otto Owner', groups: [] },
  mia: { email: 'mia@acme.test', email_verified: true, name: 'Mia Member', groups: [] },
  eve: { email: 'eve@elsewhere.test', email_verified: true, name: 'Eve Outsider', groups: [] },
  una: { email: 'una@example.com', email_verified: false, name: 'Una Unverified', groups: [] },
};

const provider = new Provider(issuer, {
  clients,
  pkce: { required: () => true },
  features: {
    devInteractions: { enabled: true },
    rpInitiatedLogout: { enabled: true },
  },
  scopes: ['openid', 'email', 'profile', 'offline_access', ...extraScopes],
  claims: {
    openid: ['sub'],
    email: ['email', 'email_verified'],
    profile: ['name', 'groups'],
  },
  conformIdTokenClaims: false,
  cookies: { keys: ['opencrane-test-provider-cookie-key'] },
  findAccount: async (_ctx, id) => {
    const account = accounts[id];
    if (!account) return undefined;
    return { accountId: id, claims: async () => ({ ...account }) };
  },
});

provider.listen(port, '127.0.0.1', () => {
  console.log(`oidc-provider listening on ${issuer}`);
});
