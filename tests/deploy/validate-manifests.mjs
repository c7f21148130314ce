// Validates Kubernetes objects against the upstream OpenAPI schemas that the npm package
// kubernetes-models carries (@kubernetes-models/prometheus-operator for ServiceMonitor,
// @kubernetes-models/keda for ScaledObject).
//   node validate-manifests.mjs FILE.yaml...
// Prints one JSON line per object: {file, kind, name, status: "valid" | "no-schema"} and exits 1
// after printing every invalid object's errors on stderr. Kustomize's own files are skipped.
//
// The schemas' validators accept fields they do not know (the API server only warns about
// them), so each object is validated through a proxy that records the fields the validator
// reads: a field it never reads is not in the schema, and is reported as an error too (a
// misspelt `readinesProbe` would otherwise pass unnoticed).
import { readFileSync } from "node:fs";
import { parseAllDocuments } from "yaml";

// Where the models of an apiVersion live: core is "v1", the others "<group>/<version>".
const MODEL_PACKAGES = {
  "monitoring.coreos.com": "@kubernetes-models/prometheus-operator",
  "keda.sh": "@kubernetes-models/keda",
};
const KUSTOMIZE_GROUP = "kustomize.config.k8s.io";

async function modelFor(apiVersion, kind) {
  const group = apiVersion.includes("/") ? apiVersion.split("/")[0] : "";
  const pkg = MODEL_PACKAGES[group] ?? "kubernetes-models";
  let mod;
  try {
    mod = await import(`${pkg}/${apiVersion}`);
  } catch {
    return null;
  }
  return typeof mod[kind] === "function" ? mod[kind] : null;
}

// A deep proxy of `value` whose reads are recorded in `seen` (a set of JSON pointer paths).
function watched(value, path, seen) {
  if (value === null || typeof value !== "object") return value;
  return new Proxy(value, {
    get(target, key, receiver) {
      const result = Reflect.get(target, key, receiver);
      if (typeof key !== "string" || !Object.prototype.hasOwnProperty.call(target, key))
        return result;
      const child = `${path}/${key}`;
      seen.add(child);
      return watched(result, child, seen);
    },
  });
}

// Paths of the object's fields (leaves and inner nodes) that were never read.
function unread(value, path, seen, out) {
  if (value === null || typeof value !== "object") return out;
  for (const [key, child] of Object.entries(value)) {
    const childPath = `${path}/${key}`;
    if (!seen.has(childPath)) out.push(childPath);
    else unread(child, childPath, seen, out);
  }
  return out;
}

let failed = false;
for (const file of process.argv.slice(2)) {
  const docs = parseAllDocuments(readFileSync(file, "utf8"));
  for (const doc of docs) {
    if (doc.errors.length > 0) {
      console.error(`${file}: YAML: ${doc.errors.map((e) => e.message).join("; ")}`);
      failed = true;
      continue;
    }
    const obj = doc.toJS();
    if (obj === null || obj === undefined) continue;
    const { apiVersion, kind } = obj;
    const name = obj.metadata?.name ?? "";
    if (typeof apiVersion !== "string" || typeof kind !== "string") {
      console.error(`${file}: an object without apiVersion and kind`);
      failed = true;
      continue;
    }
    if (apiVersion.startsWith(`${KUSTOMIZE_GROUP}/`)) continue;
    const Model = await modelFor(apiVersion, kind);
    if (Model === null) {
      console.log(JSON.stringify({ file, apiVersion, kind, name, status: "no-schema" }));
      continue;
    }
    const where = `${file}: ${kind} ${name}`;
    const seen = new Set();
    try {
      Model.prototype.validate.call(watched(obj, "", seen));
    } catch (err) {
      console.error(`${where}: ${err.message}`);
      failed = true;
      continue;
    }
    // apiVersion and kind are the type's, not schema fields the validator reads.
    seen.add("/apiVersion").add("/kind");
    const unknown = unread(obj, "", seen, []);
    if (unknown.length > 0) {
      console.error(`${where}: fields not in the schema: ${unknown.join(", ")}`);
      failed = true;
      continue;
    }
    console.log(JSON.stringify({ file, apiVersion, kind, name, status: "valid" }));
  }
}
process.exit(failed ? 1 : 0);
