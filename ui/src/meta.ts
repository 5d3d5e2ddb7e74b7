// The meta service (accounts, tokens, the query library) over gRPC-web, through the gateway
// with the session cookie and the anti-forgery header, as every call of the page.

import { Code, ConnectError, createClient, Interceptor } from "@connectrpc/connect";
import { createGrpcWebTransport } from "@connectrpc/connect-web";
import { MetaService } from "./gen/trawl/meta/v1/meta_pb";
import { CSRF_HEADER } from "./api";

const antiForgery: Interceptor = (next) => (request) => {
  request.header.set(CSRF_HEADER, "1");
  return next(request);
};

const transport = createGrpcWebTransport({
  baseUrl: window.location.origin,
  interceptors: [antiForgery],
  fetch: (input, init) => globalThis.fetch(input, { ...init, credentials: "same-origin" }),
});

export const meta = createClient(MetaService, transport);

/** A call's error as a sentence. */
export function describe(error: unknown): string {
  if (error instanceof ConnectError) {
    if (error.code === Code.PermissionDenied) return `Not allowed: ${error.rawMessage}`;
    return error.rawMessage || Code[error.code];
  }
  return error instanceof Error ? error.message : String(error);
}

/** Unix nanoseconds (a bigint from the wire) as a local date and time; "–" for 0. */
export function when(nanos: bigint): string {
  return nanos === 0n ? "–" : new Date(Number(nanos / 1_000_000n)).toLocaleString();
}
