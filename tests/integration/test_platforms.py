"""Several platforms on one broker (OSBQ_PLATFORMS, docs/platforms.md) through a real gateway,
worker and redis-server: two platforms with their own prefixes and credentials (one Basic, one
Bearer with two tokens), each seeing only its services and its instances and bindings (the
other's answer 404/410 as if absent), 401 naming the schemes a platform accepts, per-platform
metrics, a SIGHUP reload (a platform added, a token rotated) under a keep-alive client, and the
default platform of OSBQ_BROKER_USERNAME beside a file and with records from before platforms."""

import json
import os
import signal
import tempfile
import unittest

import harness

DB = "9a7f0000-0000-4000-8000-000000000001"
CACHE = "9a7f0000-0000-4000-8000-000000000002"
DB_PLAN = "9a7f0000-0000-4000-8000-000000000101"
DB_BIG = "9a7f0000-0000-4000-8000-000000000102"
CACHE_PLAN = "9a7f0000-0000-4000-8000-000000000201"

CATALOG = {"services": [
    {"id": DB, "name": "plat-db", "description": "d", "bindable": True,
     "instances_retrievable": True, "bindings_retrievable": True, "plan_updateable": True,
     "plans": [{"id": DB_PLAN, "name": "small", "description": "d", "osbq": {"backend": "sim"}},
               {"id": DB_BIG, "name": "big", "description": "d", "osbq": {"backend": "sim"}}]},
    {"id": CACHE, "name": "plat-cache", "description": "d", "bindable": True,
     "instances_retrievable": True, "bindings_retrievable": True,
     "plans": [{"id": CACHE_PLAN, "name": "tiny", "description": "d",
                "osbq": {"backend": "sim"}}]},
]}

CF_PASSWORD = "cf-password-1"
TOKEN_A = "k8s-token-aaaaaaaaaaaaaaaaaaaaaaaa"
TOKEN_B = "k8s-token-bbbbbbbbbbbbbbbbbbbbbbbb"
TOKEN_C = "k8s-token-cccccccccccccccccccccccc"
WEST_TOKEN = "west-token-dddddddddddddddddddddd"
BOTH_TOKEN = "both-token-eeeeeeeeeeeeeeeeeeeeee"

CF = {"name": "cf", "prefix": "/cf-prod",
      "basic": {"username": "cf", "password_file": "cf-password"}}
K8S = {"name": "k8s", "prefix": "/k8s-east", "bearer": {"tokens_file": "k8s-tokens"},
       "services": [CACHE]}
BOTH = {"name": "both", "prefix": "/both",
        "basic": {"username": "both", "password_file": "cf-password"},
        "bearer": {"tokens_file": "both-tokens"}}
CONTEXT = {"platform": "kubernetes", "namespace": "ns", "clusterid": "c1"}


def write(directory, name, text):
    path = os.path.join(directory, name)
    with open(path, "w") as f:
        f.write(text)
    return path


class PlatformStack:
    """A stack whose gateway reads a platforms file from a temporary directory."""

    def __init__(self, platforms, **overrides):
        self.dir = tempfile.mkdtemp(prefix="osbq-platforms-")
        catalog = write(self.dir, "catalog.json", json.dumps(CATALOG))
        write(self.dir, "cf-password", CF_PASSWORD + "\n")
        write(self.dir, "k8s-tokens", "# two tokens while rotating\n%s\n%s\n" % (TOKEN_A, TOKEN_B))
        write(self.dir, "both-tokens", BOTH_TOKEN + "\n")
        self.platforms_file = self.write_platforms(platforms)
        self.stack = harness.Stack(catalog=catalog)
        overrides.setdefault("OSBQ_BROKER_USERNAME", None)
        overrides.setdefault("OSBQ_BROKER_PASSWORD", None)
        self.gateway = self.stack.start_gateway(OSBQ_PLATFORMS=self.platforms_file, **overrides)
        self.worker = self.stack.start_worker()
        harness.wait_workers_connected([self.gateway], 1)

    def write_platforms(self, platforms):
        # Written whole then renamed: a reload never reads half a file.
        path = os.path.join(self.dir, "platforms.json")
        write(self.dir, "platforms.json.new", json.dumps({"platforms": platforms}))
        os.replace(path + ".new", path)
        return path

    def basic(self, username="cf", password=CF_PASSWORD):
        return self.stack.client(self.gateway, username=username, password=password)

    def bearer(self):
        return self.stack.client(self.gateway, username=None)

    def stop(self):
        try:
            self.stack.stop()
        finally:
            for name in os.listdir(self.dir):
                os.unlink(os.path.join(self.dir, name))
            os.rmdir(self.dir)


def bearer_header(token):
    return {"Authorization": "Bearer " + token}


class TwoPlatforms(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.p = PlatformStack([CF, K8S])
        cls.cf = cls.p.basic()
        cls.k8s = cls.p.bearer()

    @classmethod
    def tearDownClass(cls):
        cls.cf.close()
        cls.k8s.close()
        cls.p.stop()

    def k8s_request(self, method, path, body=None, token=TOKEN_A, headers=None):
        h = bearer_header(token)
        h.update(headers or {})
        return self.k8s.request(method, "/k8s-east" + path, body=body, headers=h)

    def cf_request(self, method, path, body=None, headers=None):
        return self.cf.request(method, "/cf-prod" + path, body=body, headers=headers)

    def provision(self, request, instance, service, plan):
        return request("PUT", "/v2/service_instances/%s" % instance,
                       {"service_id": service, "plan_id": plan, "context": CONTEXT})

    def test_each_platform_gets_its_catalog(self):
        r = self.cf_request("GET", "/v2/catalog")
        self.assertEqual(r.status, 200, r.body)
        self.assertEqual([s["id"] for s in r.json()["services"]], [DB, CACHE])
        cf_etag = r.header("ETag")
        r = self.k8s_request("GET", "/v2/catalog")
        self.assertEqual(r.status, 200, r.body)
        self.assertEqual([s["id"] for s in r.json()["services"]], [CACHE])
        self.assertNotIn("osbq", r.body.decode())
        k8s_etag = r.header("ETag")
        self.assertNotEqual(cf_etag, k8s_etag)
        r = self.k8s_request("GET", "/v2/catalog", headers={"If-None-Match": k8s_etag})
        self.assertEqual(r.status, 304)
        r = self.k8s_request("GET", "/v2/catalog", headers={"If-None-Match": cf_etag})
        self.assertEqual(r.status, 200)

    def test_both_tokens_work_side_by_side_with_basic(self):
        for token in (TOKEN_A, TOKEN_B):
            self.assertEqual(self.k8s_request("GET", "/v2/catalog", token=token).status, 200)
            self.assertEqual(self.cf_request("GET", "/v2/catalog").status, 200)

    def assert_401(self, r, schemes):
        self.assertEqual(r.status, 401, r.body)
        self.assertIn("description", r.json())
        # http.client joins repeated headers with ", ".
        challenge = r.header("WWW-Authenticate")
        for scheme in ("Basic", "Bearer"):
            if scheme in schemes:
                self.assertIn(scheme + " realm=", challenge)
            else:
                self.assertNotIn(scheme, challenge)

    def test_wrong_credentials_or_scheme_get_401_naming_the_schemes(self):
        # Basic credentials (even the right pair of the other platform) on the Bearer one.
        r = self.k8s.request("GET", "/k8s-east/v2/catalog",
                             headers={"Authorization": self.cf_authorization()})
        self.assert_401(r, ["Bearer"])
        self.assertIn("Bearer", r.json()["description"])
        r = self.k8s_request("GET", "/v2/catalog", token=TOKEN_A + "x")
        self.assert_401(r, ["Bearer"])
        r = self.k8s.request("GET", "/k8s-east/v2/catalog")
        self.assert_401(r, ["Bearer"])
        # A token on the Basic platform, and a wrong password.
        r = self.cf.request("GET", "/cf-prod/v2/catalog", headers=bearer_header(TOKEN_A))
        self.assert_401(r, ["Basic"])
        wrong = self.p.basic(password="nope")
        self.assert_401(wrong.request("GET", "/cf-prod/v2/catalog"), ["Basic"])
        wrong.close()
        # The right credentials under the other platform's prefix.
        r = self.cf.request("GET", "/k8s-east/v2/catalog")
        self.assert_401(r, ["Bearer"])

    def cf_authorization(self):
        import base64
        return "Basic " + base64.b64encode(("cf:" + CF_PASSWORD).encode()).decode()

    def test_prefixes_and_unprefixed_endpoints(self):
        # No platform without a prefix here: /v2 answers 404, as does an unknown prefix.
        for path in ("/v2/catalog", "/other/v2/catalog", "/cf-prod/x/v2/catalog"):
            r = self.cf.request("GET", path)
            self.assertEqual(r.status, 404, path)
            self.assertIn("description", r.json())
        # /healthz, /readyz and /metrics stay where they were, without credentials.
        plain = harness.Client(self.p.gateway.port)
        for path in ("/healthz", "/readyz", "/metrics"):
            self.assertEqual(plain.request("GET", path).status, 200, path)
            self.assertEqual(plain.request("GET", "/cf-prod" + path).status, 404, path)
        plain.close()

    def test_services_a_platform_does_not_see_are_unknown(self):
        r = self.provision(self.k8s_request, "k8s-sees-no-db", DB, DB_PLAN)
        self.assertEqual(r.status, 400, r.body)
        self.assertIn("Unknown plan_id", r.json()["description"])
        self.assertEqual(harness.redis_hash(self.p.stack.redis,
                                            "osbq:instance:k8s-sees-no-db"), {})

    def test_instances_and_bindings_are_their_platforms(self):
        inst, bind = "cf-owned-1", "cf-binding-1"
        r = self.provision(self.cf_request, inst, CACHE, CACHE_PLAN)
        self.assertEqual(r.status, 201, r.body)
        r = self.cf_request("PUT", "/v2/service_instances/%s/service_bindings/%s" % (inst, bind),
                            {"service_id": CACHE, "plan_id": CACHE_PLAN, "context": CONTEXT})
        self.assertEqual(r.status, 201, r.body)
        self.assertEqual(harness.redis_hash(self.p.stack.redis,
                                            "osbq:instance:" + inst)["platform"], "cf")
        snapshot = harness.redis_snapshot(self.p.stack.redis)
        q = "service_id=%s&plan_id=%s" % (CACHE, CACHE_PLAN)
        base = "/v2/service_instances/" + inst
        binding = base + "/service_bindings/" + bind
        # A poll that names its operation reads the operation alone (docs/decisions/0043): it
        # says its platform, so the right id is not enough either.
        op = harness.redis_hash(self.p.stack.redis, "osbq:instance:" + inst)["last_op"]
        bop = harness.redis_hash(self.p.stack.redis,
                                 "osbq:binding:%s:%s" % (inst, bind))["last_op"]
        # The other platform sees nothing of them, whatever it tries.
        answers = [
            ("GET", base, None, 404),
            ("GET", base + "/last_operation", None, 404),
            ("GET", base + "/last_operation?operation=" + op, None, 404),
            ("GET", binding + "/last_operation?operation=" + bop, None, 404),
            ("PATCH", base, {"service_id": CACHE, "parameters": {"a": 1}}, 404),
            ("PUT", base + "/service_bindings/k8s-b", {"service_id": CACHE,
                                                       "plan_id": CACHE_PLAN}, 404),
            ("GET", binding, None, 404),
            ("GET", binding + "/last_operation", None, 404),
            ("DELETE", binding + "?" + q, None, 410),
            ("DELETE", base + "?" + q, None, 410),
        ]
        for method, path, body, status in answers:
            r = self.k8s_request(method, path, body)
            self.assertEqual(r.status, status, "%s %s: %s" % (method, path, r.body))
            self.assertIn("description", r.json())
        # Provisioning the same id elsewhere cannot take it over.
        r = self.provision(self.k8s_request, inst, CACHE, CACHE_PLAN)
        self.assertEqual(r.status, 409, r.body)
        self.assertEqual(harness.redis_snapshot(self.p.stack.redis), snapshot)
        # Its own platform still has it all.
        self.assertEqual(self.cf_request("GET", base).status, 200)
        self.assertEqual(self.cf_request("GET", binding).status, 200)
        self.assertEqual(self.cf_request("GET", base + "/last_operation").status, 200)
        for path in (base + "/last_operation?operation=" + op,
                     binding + "/last_operation?operation=" + bop):
            r = self.cf_request("GET", path)
            self.assertEqual((r.status, r.json().get("state")), (200, "succeeded"), r.body)
        self.assertEqual(self.cf_request("DELETE", binding + "?" + q).status, 200)
        self.assertEqual(self.cf_request("DELETE", base + "?" + q).status, 200)
        # Once deleted, the id is free for another platform.
        r = self.provision(self.k8s_request, inst, CACHE, CACHE_PLAN)
        self.assertEqual(r.status, 201, r.body)
        self.assertEqual(self.cf_request("GET", base).status, 404)
        self.assertEqual(self.k8s_request("GET", base).status, 200)
        # Its operations stay its own: the new owner is told they are not its instance's, and
        # the old one does not read the new one's.
        new_op = harness.redis_hash(self.p.stack.redis, "osbq:instance:" + inst)["last_op"]
        r = self.k8s_request("GET", base + "/last_operation?operation=" + op)
        self.assertEqual(r.status, 400, r.body)
        self.assertIn(new_op, r.json()["description"])
        r = self.cf_request("GET", base + "/last_operation?operation=" + new_op)
        self.assertEqual(r.status, 404, r.body)

    def test_metrics_per_platform(self):
        self.assertEqual(self.k8s_request("GET", "/v2/catalog").status, 200)
        self.assertEqual(self.k8s_request("GET", "/v2/catalog", token="x" * 20).status, 401)
        self.assertEqual(self.cf_request("GET", "/v2/catalog").status, 200)
        plain = harness.Client(self.p.gateway.port)
        samples = harness.parse_metrics(plain.request("GET", "/metrics").body.decode())
        plain.close()
        total = "osbq_platform_requests_total"
        self.assertGreaterEqual(harness.metric_value(samples, total, platform="k8s", code="200"), 1)
        self.assertGreaterEqual(harness.metric_value(samples, total, platform="k8s", code="401"), 1)
        self.assertGreaterEqual(harness.metric_value(samples, total, platform="cf", code="200"), 1)


class Reload(unittest.TestCase):
    """SIGHUP rereads the file: platforms added, tokens rotated, an invalid file ignored; a
    keep-alive client goes on over the same connection throughout."""

    def setUp(self):
        self.p = PlatformStack([CF, K8S])

    def tearDown(self):
        self.p.stop()

    def reload_and_wait(self, ready):
        self.p.gateway.send_signal(signal.SIGHUP)
        harness.wait_until(ready, 10, "the gateway to reload its platforms")

    def test_add_a_platform_and_rotate_a_token(self):
        keep = self.p.bearer()

        def catalog(client, token, prefix="/k8s-east"):
            return client.request("GET", prefix + "/v2/catalog",
                                  headers=bearer_header(token)).status

        self.assertEqual(catalog(keep, TOKEN_B), 200)
        connection = keep.conn
        write(self.p.dir, "k8s-tokens", "%s\n%s\n" % (TOKEN_B, TOKEN_C))
        write(self.p.dir, "west-tokens", WEST_TOKEN + "\n")
        west = {"name": "k8s-west", "prefix": "/k8s-west",
                "bearer": {"tokens_file": "west-tokens"}}
        self.p.write_platforms([CF, K8S, west])
        other = self.p.bearer()
        self.reload_and_wait(lambda: catalog(other, WEST_TOKEN, "/k8s-west") == 200)
        self.assertEqual(catalog(other, TOKEN_C), 200)
        self.assertEqual(catalog(other, TOKEN_A), 401)
        self.assertEqual(catalog(keep, TOKEN_B), 200)
        self.assertIs(keep.conn, connection, "the keep-alive connection was closed")
        # An invalid file is refused and logged; the platforms in force stay.
        self.p.write_platforms([CF, dict(K8S, prefix="no-slash")])
        self.p.gateway.send_signal(signal.SIGHUP)
        harness.wait_until(lambda: "keeping the current platforms" in self.p.gateway.log(), 10,
                           "the gateway to refuse the invalid file")
        self.assertIn("platforms[1].prefix", self.p.gateway.log())
        self.assertEqual(catalog(keep, TOKEN_B), 200)
        self.assertEqual(catalog(other, WEST_TOKEN, "/k8s-west"), 200)
        self.assertIs(keep.conn, connection, "the keep-alive connection was closed")
        self.assertNotIn(TOKEN_B, self.p.gateway.log())
        self.assertNotIn(CF_PASSWORD, self.p.gateway.log())
        keep.close()
        other.close()


class DefaultPlatform(unittest.TestCase):
    """OSBQ_BROKER_USERNAME/PASSWORD beside the file: the platform "default", without a prefix,
    which also owns the records written before platforms were recorded."""

    @classmethod
    def setUpClass(cls):
        cls.p = PlatformStack([CF, K8S, BOTH], OSBQ_BROKER_USERNAME="broker",
                              OSBQ_BROKER_PASSWORD="s3cret-pass")
        cls.default = cls.p.stack.client(cls.p.gateway)

    @classmethod
    def tearDownClass(cls):
        cls.default.close()
        cls.p.stop()

    def test_default_platform_and_records_without_a_platform(self):
        r = self.default.request("GET", "/v2/catalog")
        self.assertEqual(r.status, 200)
        self.assertEqual(len(r.json()["services"]), 2)
        r = self.default.request("PUT", "/v2/service_instances/legacy-1",
                                 {"service_id": DB, "plan_id": DB_PLAN, "context": CONTEXT})
        self.assertEqual(r.status, 201, r.body)
        redis = self.p.stack.redis
        self.assertEqual(harness.redis_hash(redis, "osbq:instance:legacy-1")["platform"],
                         "default")
        # As written before platforms: no field. It stays the default platform's.
        redis.command("HDEL", "osbq:instance:legacy-1", "platform")
        self.assertEqual(self.default.request("GET", "/v2/service_instances/legacy-1").status, 200)
        cf = self.p.basic()
        self.assertEqual(cf.request("GET", "/cf-prod/v2/service_instances/legacy-1").status, 404)
        # Its operation, as the previous release wrote it (a service_id, no platform): a poll
        # naming it is answered through the instance's record, the default platform's
        # (docs/decisions/0043).
        op = harness.redis_hash(redis, "osbq:instance:legacy-1")["last_op"]
        redis.command("HSET", "osbq:op:" + op, "service_id", DB)
        poll = "/v2/service_instances/legacy-1/last_operation?operation=" + op
        r = self.default.request("GET", poll)
        self.assertEqual((r.status, r.json().get("state")), (200, "succeeded"), r.body)
        self.assertEqual(cf.request("GET", "/cf-prod" + poll).status, 404)
        # The default credentials do not open a prefixed platform, nor the reverse.
        self.assertEqual(self.default.request("GET", "/cf-prod/v2/catalog").status, 401)
        self.assertEqual(cf.request("GET", "/v2/catalog").status, 401)
        cf.close()
        r = self.default.request("PATCH", "/v2/service_instances/legacy-1",
                                 {"service_id": DB, "plan_id": DB_BIG})
        self.assertEqual(r.status, 200, r.body)

    def test_a_platform_with_both_schemes(self):
        both = self.p.basic(username="both")
        self.assertEqual(both.request("GET", "/both/v2/catalog").status, 200)
        self.assertEqual(both.request("GET", "/both/v2/catalog",
                                      headers=bearer_header(BOTH_TOKEN)).status, 200)
        r = both.request("GET", "/both/v2/catalog", headers=bearer_header(TOKEN_A))
        self.assertEqual(r.status, 401)
        challenge = r.header("WWW-Authenticate")
        self.assertIn('Basic realm="osbq"', challenge)
        self.assertIn('Bearer realm="osbq"', challenge)
        self.assertIn("Bearer", r.json()["description"])
        # The default platform's 401 is the one it always gave: Basic only.
        r = self.default.request("GET", "/v2/catalog", headers=bearer_header(BOTH_TOKEN))
        self.assertEqual(r.status, 401)
        self.assertNotIn("Bearer", r.header("WWW-Authenticate"))
        both.close()

    def test_no_credentials_at_all_refused_at_start(self):
        status, output = harness.run_once([harness.GATEWAY], self.p.stack.env(
            OSBQ_BROKER_USERNAME=None, OSBQ_BROKER_PASSWORD=None))
        self.assertNotEqual(status, 0)
        self.assertIn("OSBQ_BROKER_USERNAME", output)
        status, output = harness.run_once([harness.GATEWAY], self.p.stack.env(
            OSBQ_PLATFORMS=self.p.platforms_file, OSBQ_BROKER_PASSWORD=None))
        self.assertNotEqual(status, 0)
        self.assertIn("set both OSBQ_BROKER_USERNAME and OSBQ_BROKER_PASSWORD", output)
        bad = write(self.p.dir, "bad.json", json.dumps({"platforms": [dict(K8S, services=["x"])]}))
        status, output = harness.run_once([harness.GATEWAY], self.p.stack.env(
            OSBQ_PLATFORMS=bad))
        self.assertNotEqual(status, 0)
        self.assertIn("OSBQ_PLATFORMS", output)
        self.assertIn("platforms[0].services[0]", output)


if __name__ == "__main__":
    unittest.main()
