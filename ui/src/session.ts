// Who is signed in: only from the gateway-signed identity token (an EdDSA JWT), verified
// here against the keys the gateways publish at /api/gateway-keys. The tab reloads itself a
// few minutes before the token expires, which gets a fresh one while the session lasts.

import { ApiError, call, callJson } from "./api";

export interface Identity {
  name: string;
  role: string;
  expiresAt: number;
}

const RELOAD_BEFORE_SECS = 5 * 60;

function base64url(text: string): Uint8Array<ArrayBuffer> {
  const padded = text.replace(/-/g, "+").replace(/_/g, "/") + "===".slice((text.length + 3) % 4);
  const binary = atob(padded);
  return Uint8Array.from(binary, (c) => c.charCodeAt(0));
}

async function verified(token: string): Promise<Record<string, any>> {
  const [head, body, signature] = token.split(".");
  if (!head || !body || !signature) throw new Error("the identity token is malformed");
  const header = JSON.parse(new TextDecoder().decode(base64url(head)));
  if (header.alg !== "EdDSA") throw new Error("the identity token is not EdDSA");
  const { keys } = await callJson<{ keys: { kid: string; x: string }[] }>("/api/gateway-keys");
  const jwk = keys.find((k) => k.kid === header.kid);
  if (!jwk) throw new Error("the identity token's key is not published");
  const key = await crypto.subtle.importKey("raw", base64url(jwk.x), { name: "Ed25519" }, false, ["verify"]);
  const input = new TextEncoder().encode(`${head}.${body}`);
  const ok = await crypto.subtle.verify({ name: "Ed25519" }, key, base64url(signature), input);
  if (!ok) throw new Error("the identity token's signature is not valid");
  const claims = JSON.parse(new TextDecoder().decode(base64url(body)));
  if (typeof claims.exp !== "number" || claims.exp * 1000 <= Date.now()) throw new Error("the identity token expired");
  return claims;
}

/** The signed-in identity, or null when nobody is signed in. */
export async function currentIdentity(): Promise<Identity | null> {
  let answer: { identity: string };
  try {
    answer = await callJson("/api/ui/session");
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) return null;
    throw error;
  }
  const claims = await verified(answer.identity);
  const identity = { name: String(claims.name), role: String(claims.role), expiresAt: claims.exp };
  const reloadIn = (identity.expiresAt - RELOAD_BEFORE_SECS) * 1000 - Date.now();
  window.setTimeout(() => window.location.reload(), Math.max(reloadIn, 60_000));
  return identity;
}

export async function signIn(name: string, password: string): Promise<void> {
  await call("/api/ui/sign-in", { method: "POST", body: JSON.stringify({ name, password }) });
}

export async function signOut(): Promise<void> {
  await call("/api/ui/sign-out", { method: "POST" });
}
