"""Plan parameter schemas end to end (tests/data/catalog-schemas.json): provision, update and
bind validate `parameters` against the plan's schemas.*.parameters before anything is written,
answering 400 with a description naming the first failing path and keyword; the catalog served
to platforms carries the schemas unchanged. Spec: Schema Object, and the `parameters` rows of
Provisioning, Updating and Binding (../shared/spec/osb-latest-spec.md)."""

import json
import os
import time
import unittest
import uuid

import harness

CATALOG = os.path.join(harness.SOURCE_DIR, "tests", "data", "catalog-schemas.json")
SERVICE = "7e1d2e3f-8a9b-4c0d-9e1f-2a3b4c5d6e01"
SIZED = "7e1d2e3f-8a9b-4c0d-9e1f-2a3b4c5d6f01"
SIZED_LARGE = "7e1d2e3f-8a9b-4c0d-9e1f-2a3b4c5d6f02"
FREE_FORM = "7e1d2e3f-8a9b-4c0d-9e1f-2a3b4c5d6f03"
BACKTRACKING = "7e1d2e3f-8a9b-4c0d-9e1f-2a3b4c5d6f04"


class PlanSchemas(harness.GatewayTestCase):
    CATALOG = CATALOG

    @classmethod
    def start_stack(cls):
        cls.gateway, [cls.worker] = harness.start_connected(cls.stack)

    def new_id(self, what):
        return "%s-%s" % (what, uuid.uuid4())

    def provision(self, iid, plan, parameters=None):
        body = {"service_id": SERVICE, "plan_id": plan, "organization_guid": "o",
                "space_guid": "s"}
        if parameters is not None:
            body["parameters"] = parameters
        return self.client.request("PUT", "/v2/service_instances/" + iid, body)

    def update(self, iid, parameters=None, plan=None):
        body = {"service_id": SERVICE}
        if plan is not None:
            body["plan_id"] = plan
        if parameters is not None:
            body["parameters"] = parameters
        return self.client.request("PATCH", "/v2/service_instances/" + iid, body)

    def bind(self, iid, bid, plan, parameters=None):
        body = {"service_id": SERVICE, "plan_id": plan}
        if parameters is not None:
            body["parameters"] = parameters
        return self.client.request(
            "PUT", "/v2/service_instances/%s/service_bindings/%s" % (iid, bid), body)

    def assertRefused(self, send, description):
        """send() answers 400 with exactly description and writes nothing to Redis."""
        before = harness.redis_snapshot(self.stack.redis)
        r = send()
        self.assertEqual(r.status, 400, r.body)
        self.assertEqual(r.header("Content-Type"), "application/json")
        self.assertEqual(r.json(), {"description": description})
        self.assertEqual(harness.redis_snapshot(self.stack.redis), before,
                         "a refused request wrote to Redis")

    def test_provision_validates_parameters(self):
        iid = self.new_id("i")
        cases = [
            ({"name": "db", "size": 300}, "parameters.size: 300 is greater than the maximum of 100"),
            ({"name": "db", "size": 0}, "parameters.size: 0 is less than the minimum of 1"),
            ({"name": "db", "size": "big"}, "parameters.size: string is not of type integer"),
            ({"name": "Db"}, 'parameters.name: "Db" does not match the pattern "^[a-z][a-z0-9-]*$"'),
            ({"name": "db", "tier": "huge"}, 'parameters.tier: "huge" is not one of the enum values'),
            ({"name": "db", "owner": "nobody"},
             'parameters.owner: "nobody" is not a valid email (format)'),
            ({"name": "db", "colour": "red"},
             'parameters: the property "colour" is not allowed (additionalProperties)'),
            ({"size": 5}, 'parameters: the required property "name" is missing'),
            # Absent parameters are checked as {}: this schema requires a name.
            (None, 'parameters: the required property "name" is missing'),
        ]
        for parameters, description in cases:
            with self.subTest(parameters=parameters):
                self.assertRefused(lambda: self.provision(iid, SIZED, parameters), description)
        r = self.client.request("GET", "/v2/service_instances/" + iid)
        self.assertEqual(r.status, 404, r.body)

        r = self.provision(iid, SIZED, {"name": "db", "size": 100, "tier": "large",
                                        "owner": "ops@example.test"})
        self.assertEqual(r.status, 201, r.body)

    def test_update_validates_against_the_target_plan(self):
        iid = self.new_id("i")
        self.assertEqual(self.provision(iid, SIZED, {"name": "db"}).status, 201)
        self.assertRefused(lambda: self.update(iid, {"size": 250}),
                           "parameters.size: 250 is greater than the maximum of 200")
        self.assertRefused(lambda: self.update(iid, {"name": "other"}),
                           'parameters: the property "name" is not allowed '
                           '(additionalProperties)')
        r = self.update(iid, {"size": 150})
        self.assertEqual(r.status, 200, r.body)
        # No parameters: nothing to change, nothing to check.
        r = self.update(iid)
        self.assertEqual(r.status, 200, r.body)
        # Moving plans: the target plan's update schema applies (size up to 500).
        self.assertRefused(lambda: self.update(iid, {"size": 600}, plan=SIZED_LARGE),
                           "parameters.size: 600 is greater than the maximum of 500")
        r = self.update(iid, {"size": 450}, plan=SIZED_LARGE)
        self.assertEqual(r.status, 200, r.body)

    def test_bind_validates_parameters(self):
        iid = self.new_id("i")
        self.assertEqual(self.provision(iid, SIZED, {"name": "db"}).status, 201)
        bid = self.new_id("b")
        self.assertRefused(lambda: self.bind(iid, bid, SIZED),
                           'parameters: the required property "role" is missing')
        self.assertRefused(lambda: self.bind(iid, bid, SIZED, {"role": "admin"}),
                           'parameters.role: "admin" is not one of the enum values')
        self.assertRefused(lambda: self.bind(iid, bid, SIZED, {"role": "ro", "ttl": 0}),
                           "parameters.ttl: 0 is less than or equal to the exclusiveMinimum "
                           "of 0")
        r = self.client.request("GET", "/v2/service_instances/%s/service_bindings/%s"
                                % (iid, bid))
        self.assertEqual(r.status, 404, r.body)
        r = self.bind(iid, bid, SIZED, {"role": "ro", "ttl": 0.5})
        self.assertEqual(r.status, 201, r.body)

    def test_plans_without_schemas_take_any_parameters(self):
        iid = self.new_id("i")
        r = self.provision(iid, FREE_FORM, {"anything": [1, {"goes": True}]})
        self.assertEqual(r.status, 201, r.body)
        r = self.bind(iid, self.new_id("b"), FREE_FORM, {"whatever": None})
        self.assertEqual(r.status, 201, r.body)

    def test_backtracking_pattern_is_bounded(self):
        """A pattern with catastrophic backtracking is stopped by the match limit: a 400 in
        bounded time, and the gateway keeps serving."""
        iid = self.new_id("i")
        start = time.monotonic()
        self.assertRefused(lambda: self.provision(iid, BACKTRACKING, {"label": "a" * 40 + "!"}),
                           'parameters.label: schema too costly: the pattern "^(\\w+\\s?)*$" '
                           'exceeded its match limit')
        self.assertLess(time.monotonic() - start, 5.0)
        self.assertEqual(self.provision(iid, BACKTRACKING, {"label": "a b c"}).status, 201)
        self.assertTrue(self.gateway.alive())

    def test_catalog_serves_the_schemas_unchanged(self):
        with open(CATALOG) as f:
            source = json.load(f)
        r = self.client.request("GET", "/v2/catalog")
        self.assertEqual(r.status, 200, r.body)
        served = r.json()
        want = {p["id"]: p.get("schemas") for p in source["services"][0]["plans"]}
        got = {p["id"]: p.get("schemas") for p in served["services"][0]["plans"]}
        self.assertEqual(got, want)
        self.assertIsNotNone(got[SIZED])


if __name__ == "__main__":
    unittest.main()
