"""Checks every HTTP exchange the integration tests make through harness.Client against the
spec's OpenAPI document (tests/data/spec/osb-openapi-2.17.yaml, a copy of OSB v2.17's
openapi.yaml): the operation (path template and method), the status listed for it, the response
body against its schema, the Content-Type of a body, and, for answers the broker accepted
(2xx), the request body, query and headers against the request's description. Answers to
requests sent with an older X-Broker-API-Version must not carry fields introduced later.

Where the OpenAPI document is narrower than the spec's prose, STATUS_EXCEPTIONS and
REQUEST_EXCEPTIONS say so, each with the spec section that allows it; the checker itself is not
loosened. docs/conformance.md describes the checker; decision 0023 why it is built this way.

Paths off /v2 (/metrics, /healthz, ...) are counted as unchecked. A platform prefix
(/<prefix>/v2/...) is checked as the /v2 path it stands for. The counts go to the file named by
OSBQ_OPENAPI_REPORT at exit (openapi_report.py adds them up at the end of the run)."""

import atexit
import collections
import json
import os
import re
import sys
import threading
import urllib.parse

import jsonschema
import yaml

SOURCE_DIR = os.path.abspath(os.path.join(os.path.dirname(__file__), "../.."))
OPENAPI_PATH = os.path.join(SOURCE_DIR, "tests", "data", "spec", "osb-openapi-2.17.yaml")

# Statuses the spec's prose allows for an operation whose OpenAPI entry does not list them:
# (operationId or "*" for every operation, status, the spec section that allows it). Such an
# answer is still checked: an Error object (Service Broker Errors) with a non-empty description.
STATUS_EXCEPTIONS = (
    # A fetch for a service that does not declare instances_retrievable / bindings_retrievable
    # ("Specifies whether the ... endpoint is supported"): the endpoint is not supported for it
    # and the request is refused as one the broker cannot take (decision 0003).
    ("serviceInstance.get", 400, "Service Offering Object: instances_retrievable"),
    ("serviceBinding.get", 400, "Service Offering Object: bindings_retrievable"),
    # "MUST return a 401 Unauthorized response if the authentication fails": every operation,
    # while the document lists 401 for the mutating ones and last_operation only.
    ("*", 401, "Platform to Service Broker Authentication"),
    # "the Service Broker MAY reject the request with 412 Precondition Failed" (a version it
    # does not support).
    ("*", 412, "Headers / API Version Header"),
    # The 5xx range is allowed for any failure ("an HTTP status code in the 5xx range SHOULD
    # result in the Service Broker's resources being semantically unchanged"): osbq answers
    # 500 (internal error), 502 (the backend failed a synchronous operation), 503 (Redis or
    # every worker away), 504 (a synchronous operation outlived the plan's limit).
    ("*", "5xx", "Service Broker Errors"),
    # "an individual Service Broker MAY support one or many Platforms using different URL
    # prefixes": the catalog at a prefix (or at a bare /v2) no platform uses is not one of the
    # broker's endpoints, and 404 says so. Other operations under such a URL are not excepted.
    ("catalog.get", 404, "API Overview"),
    # "Service Brokers MAY ... use ETag and If-Modified-Since headers" on the catalog (added
    # in 2.16): 304 Not Modified, without a body, to a conditional GET.
    ("catalog.get", 304, "Catalog Management"),
    # A refusal by the broker's policy (OSBQ_POLICY, decision 0011): the prose defines no
    # status for provisioning or binding against a full quota or a deny rule, and "Where the
    # specification defines the expected response code, that response code MUST be used" only
    # binds where it does. For an update it does (422, "over the quota of the requested
    # Service Plan"), so an update's refusal is 422 and not listed here.
    ("serviceInstance.provision", 403, "Service Broker Errors (decision 0011)"),
    ("serviceBinding.binding", 403, "Service Broker Errors (decision 0011)"),
    # "422 Unprocessable Entity: MUST be returned if the Service Instance is being updated and
    # therefore cannot be fetched at this time"; the document lists 200 and 404 only.
    ("serviceInstance.get", 422, "Fetching a Service Instance / Response"),
    # Updating or binding to an instance that does not exist: the prose defines no code; 404
    # Not Found is what the fetch and last_operation sections use for it.
    ("serviceInstance.update", 404, "Service Broker Errors / Fetching a Service Instance"),
    ("serviceBinding.binding", 404, "Service Broker Errors / Fetching a Service Instance"),
)

# Request body fields the OpenAPI document requires where the prose lets a platform leave them
# out: (operationId, field, spec section).
REQUEST_EXCEPTIONS = (
    # The prose marks organization_guid and space_guid REQUIRED but "Deprecated in favor of
    # context"; Kubernetes' service catalog sends context only, and the tests send both where
    # they model Cloud Foundry. A request without them is valid for osbq (decision 0003).
    ("serviceInstance.provision", "organization_guid", "Provisioning / Body"),
    ("serviceInstance.provision", "space_guid", "Provisioning / Body"),
    # A rotation's body is predecessor_binding_id alone ("Platforms do not necessarily store
    # these parameter values"); the document's schema still requires the ids: the prose rules
    # (decision 0047). Excepted only in a body that names a predecessor.
    ("serviceBinding.binding", "service_id", "Request (Rotating a Service Binding) / Body",
     "predecessor_binding_id"),
    ("serviceBinding.binding", "plan_id", "Request (Rotating a Service Binding) / Body",
     "predecessor_binding_id"),
)

# Optional top-level request members osbq takes as absent when they are JSON null, beyond the
# letter: clients generated from the document (Korifi's, with no omitempty) send null for every
# unset field (docs/conformance.md). A request checked here has them dropped first; any other
# null is checked as sent.
NULL_AS_ABSENT = ("parameters", "context", "maintenance_info", "bind_resource", "app_guid",
                  "previous_values", "organization_guid", "space_guid", "service_id", "plan_id",
                  "predecessor_binding_id")

# Response fields by the API version that introduced them (release notes of 2.9-2.17): an
# answer to an older X-Broker-API-Version must not carry them. (operationId, JSON pointer,
# (major, minor)). The catalog is not in this list: "New fields MAY be added to existing
# request/response messages. These fields ... SHOULD be ignored by clients ... that do not
# understand them" (Change Policy for Minor Versions), and a platform reads the catalog before
# it knows which plan fields it needs.
VERSIONED_FIELDS = (
    ("serviceInstance.provision", "/operation", (2, 9)),
    ("serviceInstance.update", "/operation", (2, 9)),
    ("serviceInstance.deprovision", "/operation", (2, 9)),
    ("serviceInstance.update", "/dashboard_url", (2, 14)),
    ("serviceInstance.provision", "/metadata", (2, 16)),
    ("serviceInstance.update", "/metadata", (2, 16)),
    ("serviceInstance.get", "/maintenance_info", (2, 15)),
    ("serviceInstance.get", "/metadata", (2, 16)),
    ("serviceInstance.get", "/metadata/attributes", (2, 17)),
    ("serviceInstance.provision", "/metadata/attributes", (2, 17)),
    ("serviceInstance.update", "/metadata/attributes", (2, 17)),
    ("serviceBinding.binding", "/endpoints", (2, 15)),
    ("serviceBinding.get", "/endpoints", (2, 15)),
    ("serviceBinding.binding", "/metadata", (2, 16)),
    ("serviceBinding.get", "/metadata", (2, 16)),
    ("serviceInstance.lastOperation.get", "/instance_usable", (2, 16)),
    ("serviceInstance.lastOperation.get", "/update_repeatable", (2, 16)),
    ("serviceBinding.lastOperation.get", "/instance_usable", (2, 16)),
    ("*", "/instance_usable", (2, 16)),
    ("*", "/update_repeatable", (2, 16)),
)


# What an answer whose status only the exceptions allow is held to (Service Broker Errors).
ERROR_SCHEMA = {"$ref": "#/components/schemas/Error"}


class ConformanceError(AssertionError):
    """An exchange the OpenAPI document (with its exceptions) does not allow."""


class Operation:
    """One method of one path template of the document, with the regex of its paths."""

    def __init__(self, template, method, spec):
        self.template = template
        self.method = method
        self.spec = spec
        self.operation_id = spec.get("operationId", "%s %s" % (method, template))
        self.pattern = re.compile("^" + re.sub(r"\\\{[a-z_]+\\\}", "[^/]+",
                                               re.escape(template)) + "$")


class Document:
    """The OpenAPI document: its operations, and validators whose $refs resolve within it."""

    def __init__(self, path=OPENAPI_PATH):
        with open(path, encoding="utf-8") as f:
            self.doc = yaml.safe_load(f)
        self.operations = []
        for template, item in self.doc["paths"].items():
            for method, spec in item.items():
                if method in ("get", "put", "patch", "delete", "post"):
                    self.operations.append(Operation(template, method.upper(), spec))
        self.lock = threading.Lock()
        self.validators = {}

    def find(self, method, path):
        """(template, operation) of an OSB path; operation None when the method has none."""
        template = None
        for op in self.operations:
            if op.pattern.match(path):
                template = op.template
                if op.method == method:
                    return template, op
        return template, None

    def validator(self, schema):
        # The schema embedded in the whole document: "#/components/schemas/..." resolves
        # against the document the way the validator resolves any local $ref.
        key = json.dumps(schema, sort_keys=True)
        with self.lock:
            if key not in self.validators:
                root = dict(self.doc)
                root.update(schema)
                jsonschema.Draft4Validator.check_schema(schema)
                self.validators[key] = jsonschema.Draft4Validator(root)
            return self.validators[key]

    def resolve(self, node):
        while isinstance(node, dict) and "$ref" in node:
            target = self.doc
            for part in node["$ref"].lstrip("#/").split("/"):
                target = target[part]
            node = target
        return node


class Report:
    """Exchanges checked per "METHOD /v2 template" and those not checked (off /v2)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.checked = collections.Counter()
        self.unchecked = collections.Counter()
        self.excepted = collections.Counter()

    def count(self, key, checked):
        with self.lock:
            (self.checked if checked else self.unchecked)[key] += 1

    def count_exception(self, operation_id, status):
        with self.lock:
            self.excepted["%s %s" % (operation_id, status)] += 1

    def as_dict(self):
        with self.lock:
            return {"checked": dict(self.checked), "unchecked": dict(self.unchecked),
                    "exceptions": dict(self.excepted)}


# The one document and report of this test process (each ctest test is a process of its own).
_document = None
_document_lock = threading.Lock()
REPORT = Report()


def document():
    global _document
    with _document_lock:
        if _document is None:
            _document = Document()
        return _document


def osb_path(path):
    """The /v2 path a request path stands for (a platform's prefix dropped), or None."""
    path = urllib.parse.urlsplit(path).path
    if path.startswith("/v2/"):
        return path
    at = path.find("/v2/")
    if at > 0:  # a platform's prefix: /<prefix>/v2/...
        return path[at:]
    return None


def api_version(headers):
    value = (headers or {}).get("X-Broker-API-Version")
    m = re.match(r"^(\d+)\.(\d+)$", value or "")
    return (int(m.group(1)), int(m.group(2))) if m else None


def pointer(path):
    return "/" + "/".join(str(p).replace("~", "~0").replace("/", "~1") for p in path)


def _has_pointer(body, ptr):
    node = body
    for part in ptr.strip("/").split("/"):
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    return True


def _schema_errors(doc, schema, value, skip_required=()):
    found = []
    for e in sorted(doc.validator(schema).iter_errors(value), key=lambda e: list(e.path)):
        if e.validator == "required" and not e.path and any(
                "'%s'" % name in e.message for name in skip_required):
            continue
        found.append("%s: %s (rule: %s)" % (pointer(e.path), e.message, e.validator))
    return found


def problems(method, path, request_headers, request_body, status, response_headers,
             response_body):
    """What is wrong with one exchange, as a list of texts ([] when it conforms); None when the
    path is not an OSB path (not checked)."""
    v2 = osb_path(path)
    if v2 is None:
        return None
    doc = document()
    # HEAD is GET without the body (RFC 9110 9.3.2): the same operation and statuses.
    template, op = doc.find("GET" if method == "HEAD" else method, v2)
    found = []
    body = None
    if response_body and method != "HEAD":
        try:
            body = json.loads(response_body)
        except ValueError:
            found.append("body is not JSON: %r" % response_body[:200])
        ctype = (response_headers.get("content-type") or "").split(";")[0].strip()
        if ctype != "application/json":
            found.append("Content-Type %r, not application/json (rule: Content Type)" % ctype)
    if status >= 400 and method != "HEAD":
        # Our own rule on top of the Error schema: every error answer explains itself.
        if not isinstance(body, dict):
            found.append("error answer is not a JSON object (rule: Service Broker Errors)")
        elif not isinstance(body.get("description"), str) or not body["description"]:
            found.append("/description: missing or empty (rule: Service Broker Errors)")
    if op is None:
        # No such operation: an unknown /v2 path (404) or method (405); only the error rules.
        if 200 <= status < 300:
            found.append("%s answered %d but the document has no such operation (template %s)"
                         % (method, status, template))
        return found
    responses = op.spec.get("responses", {})
    listed = responses.get(str(status))
    if listed is None:
        allowed = [e for e in STATUS_EXCEPTIONS
                   if e[1] in (status, "%dxx" % (status // 100))
                   and e[0] in ("*", op.operation_id)]
        if not allowed:
            found.append("status %d is not listed for %s (rule: responses)"
                         % (status, op.operation_id))
        else:
            REPORT.count_exception(allowed[0][0], allowed[0][1])
        schema = ERROR_SCHEMA if status >= 400 else None
    else:
        media = (listed.get("content") or {}).get("application/json") or {}
        schema = media.get("schema")
        for name, header in (listed.get("headers") or {}).items():
            if header.get("required") and name.lower() not in response_headers:
                found.append("header %s missing (rule: required header)" % name)
    if schema is not None and body is not None and method != "HEAD":
        found += _schema_errors(doc, schema, body)
    version = api_version(request_headers)
    if version is not None and isinstance(body, dict):
        for operation_id, ptr, since in VERSIONED_FIELDS:
            if operation_id in ("*", op.operation_id) and version < since and _has_pointer(body, ptr):
                found.append("%s: introduced in %d.%d, answered to API %d.%d (rule: version)"
                             % (ptr, since[0], since[1], version[0], version[1]))
    if 200 <= status < 300:
        found += request_problems(doc, op, v2, path, request_headers, request_body)
    return found


def request_problems(doc, op, v2, path, headers, body):
    """What a request the broker accepted does not have that the document requires."""
    found = []
    query = urllib.parse.parse_qs(urllib.parse.urlsplit(path).query, keep_blank_values=True)
    sent = {k.lower(): v for k, v in (headers or {}).items()}
    for param in op.spec.get("parameters", []):
        param = doc.resolve(param)
        if not param.get("required"):
            continue
        where, name = param.get("in"), param["name"]
        if where == "query" and name not in query:
            found.append("request: query parameter %s missing (rule: required parameter)" % name)
        elif where == "header" and name.lower() not in sent:
            found.append("request: header %s missing (rule: required parameter)" % name)
    described = ((op.spec.get("requestBody") or {}).get("content") or {}).get("application/json")
    if described is not None:
        if body is None:
            found.append("request: no body (rule: requestBody required)")
        else:
            try:
                value = json.loads(body) if isinstance(body, (bytes, str)) else body
            except ValueError:
                return found + ["request: body is not JSON"]
            if isinstance(value, dict):
                value = {k: v for k, v in value.items()
                         if v is not None or k not in NULL_AS_ABSENT}
            skip = [e[1] for e in REQUEST_EXCEPTIONS if e[0] == op.operation_id and
                    (len(e) < 4 or (isinstance(value, dict) and e[3] in value))]
            found += ["request: " + p
                      for p in _schema_errors(doc, described["schema"], value, skip)]
    return found


def check(method, path, request_headers, request_body, status, response_headers,
          response_body):
    """Counts one exchange and raises ConformanceError naming the endpoint, the status, the
    JSON pointer and the rule of each problem."""
    found = problems(method, path, request_headers, request_body, status, response_headers,
                     response_body)
    v2 = osb_path(path)
    if found is None:
        REPORT.count("/" + urllib.parse.urlsplit(path).path.split("/")[1], False)
        return
    template, op = document().find("GET" if method == "HEAD" else method, v2)
    REPORT.count("%s %s" % (method, template or "(no /v2 template)"), True)
    if found:
        raise ConformanceError("OpenAPI: %s %s (API %s) -> %d: %s\nbody: %r"
                               % (method, path, (request_headers or {}).get(
                                   "X-Broker-API-Version"), status, "; ".join(found),
                                  response_body[:300]))


def _write_report():
    counts = REPORT.as_dict()
    total = sum(counts["checked"].values())
    if not total and not counts["unchecked"]:
        return
    print("openapi: %d exchanges checked, %d not on /v2"
          % (total, sum(counts["unchecked"].values())), file=sys.stderr)
    target = os.environ.get("OSBQ_OPENAPI_REPORT")
    if target:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "w", encoding="utf-8") as f:
            json.dump(counts, f, indent=1, sort_keys=True)


atexit.register(_write_report)
