// An OpenID Connect provider for the SSO browser tests: `oidc-provider` with its development
// login pages (any password; the login name becomes the subject and preferred_username).
// PORT and REDIRECT_URI come from the environment; the client is `trawl` / CLIENT_SECRET.
// As most providers, it puts profile claims in the userinfo answer, not in the ID token.
import Provider from "oidc-provider";

const port = Number(process.env.PORT);
const issuer = `http://127.0.0.1:${port}`;
const provider = new Provider(issuer, {
  clients: [
    {
      client_id: "trawl",
      client_secret: process.env.CLIENT_SECRET,
      redirect_uris: [process.env.REDIRECT_URI],
      grant_types: ["authorization_code"],
      response_types: ["code"],
    },
  ],
  pkce: { required: () => true },
  claims: { openid: ["sub"], profile: ["preferred_username", "name"], email: ["email"] },
  findAccount: async (_ctx, id) => ({
    accountId: id,
    claims: async () => ({ sub: `subject-${id}`, preferred_username: id, name: id, email: `${id}@example.com` }),
  }),
  cookies: { keys: ["only-for-tests"] },
  features: { devInteractions: { enabled: true } },
});
provider.listen(port, "127.0.0.1", () => console.log(`ready ${issuer}`));
