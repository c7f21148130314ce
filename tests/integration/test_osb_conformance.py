"""The OpenAPI checker itself (osb_conformance.py): it finds what it must find, names the
endpoint, status, JSON pointer and rule, and its exception lists point at real operations."""

import json
import unittest

import osb_conformance as oc

INSTANCE = "/v2/service_instances/i-1"
JSON = {"content-type": "application/json"}
V217 = {"X-Broker-API-Version": "2.17"}
PROVISION = {"service_id": "s", "plan_id": "p", "organization_guid": "o", "space_guid": "s"}


def problems(method, path, status, body, request=None, headers=V217, response_headers=JSON):
    raw = json.dumps(body).encode() if body is not None else b""
    req = json.dumps(request) if request is not None else None
    return oc.problems(method, path, headers, req, status, response_headers, raw)


class Checker(unittest.TestCase):
    def test_conforming_exchanges_pass(self):
        self.assertEqual(problems("PUT", INSTANCE, 201, {"dashboard_url": "http://d"},
                                  PROVISION), [])
        self.assertEqual(problems("GET", INSTANCE + "/last_operation?operation=x", 200,
                                  {"state": "in progress"}), [])
        self.assertEqual(problems("GET", "/v2/catalog", 200, {"services": []}), [])

    def test_wrong_type_names_pointer_and_rule(self):
        found = problems("PUT", INSTANCE, 201, {"dashboard_url": 5}, PROVISION)
        self.assertEqual(len(found), 1, found)
        self.assertIn("/dashboard_url", found[0])
        self.assertIn("rule: type", found[0])

    def test_refs_resolve_into_nested_schemas(self):
        catalog = {"services": [{"id": "s", "name": "n", "description": "d", "bindable": True,
                                 "plans": [{"id": "p", "name": "n", "description": "d",
                                            "maintenance_info": {}}]}]}
        found = problems("GET", "/v2/catalog", 200, catalog)
        self.assertEqual(len(found), 1, found)
        self.assertIn("/services/0/plans/0/maintenance_info", found[0])
        self.assertIn("rule: required", found[0])

    def test_missing_required_field(self):
        found = problems("GET", INSTANCE + "/last_operation", 200, {"description": "x"})
        self.assertTrue(any("rule: required" in p and "state" in p for p in found), found)

    def test_status_not_listed(self):
        found = problems("GET", "/v2/catalog", 409, {"description": "x"})
        self.assertTrue(any("status 409 is not listed for catalog.get" in p for p in found),
                        found)

    def test_status_the_prose_allows(self):
        self.assertEqual(problems("GET", "/v2/catalog", 401, {"description": "x"}), [])
        self.assertEqual(problems("GET", INSTANCE, 422, {"description": "x"}), [])
        self.assertEqual(problems("GET", INSTANCE, 503, {"description": "x"}), [])

    def test_error_answers_need_a_description_and_the_error_schema(self):
        self.assertTrue(problems("PUT", INSTANCE, 400, {"error": "X"}, PROVISION))
        found = problems("PUT", INSTANCE, 400, {"description": "x", "error": 3})
        self.assertTrue(any("/error" in p and "rule: type" in p for p in found), found)
        found = problems("PUT", INSTANCE, 400, None, PROVISION,
                         response_headers={"content-type": "text/plain"})
        self.assertTrue(found)

    def test_platform_prefix_maps_to_v2_and_other_paths_are_not_checked(self):
        self.assertIsNone(problems("GET", "/metrics", 200, None))
        found = problems("GET", "/cf-prod/v2/catalog", 200, {"services": 1})
        self.assertTrue(any("/services" in p for p in found), found)

    def test_requests_the_broker_accepted_are_checked(self):
        found = problems("PUT", INSTANCE, 201, {}, {"service_id": 1, "plan_id": "p"})
        self.assertTrue(any(p.startswith("request: /service_id") for p in found), found)
        # organization_guid and space_guid: REQUEST_EXCEPTIONS.
        self.assertEqual(problems("PUT", INSTANCE, 201, {}, {"service_id": "s",
                                                             "plan_id": "p"}), [])
        found = problems("DELETE", INSTANCE + "?service_id=s", 200, {})
        self.assertTrue(any("plan_id missing" in p for p in found), found)
        found = problems("GET", "/v2/catalog", 200, {"services": []}, headers={})
        self.assertTrue(any("X-Broker-API-Version missing" in p for p in found), found)

    def test_rotation_bodies_and_nulls_beyond_the_document(self):
        binding = INSTANCE + "/service_bindings/b"
        # Request (Rotating a Service Binding): predecessor_binding_id alone (decision 0047).
        self.assertEqual(problems("PUT", binding, 201, {"credentials": {}},
                                  {"predecessor_binding_id": "a"}), [])
        found = problems("PUT", binding, 201, {"credentials": {}}, {"parameters": {}})
        self.assertTrue(any("'service_id' is a required property" in p for p in found), found)
        # A null optional member is absent (docs/conformance.md); a null elsewhere is not.
        self.assertEqual(problems("PUT", INSTANCE, 201, {}, {
            "service_id": "s", "plan_id": "p", "parameters": None, "context": None}), [])
        found = problems("PUT", INSTANCE, 201, {}, {"service_id": "s", "plan_id": "p",
                                                    "parameters": {"a": None}, "dummy": None})
        self.assertEqual(found, [])
        found = problems("PUT", INSTANCE, 201, {}, {"service_id": None, "plan_id": "p"})
        self.assertTrue(any("service_id" in p for p in found), found)

    def test_fields_newer_than_the_request_version(self):
        old = {"X-Broker-API-Version": "2.15"}
        found = problems("PUT", INSTANCE + "/service_bindings/b", 201,
                         {"credentials": {}, "metadata": {"expires_at": "x"}},
                         {"service_id": "s", "plan_id": "p"}, headers=old)
        self.assertTrue(any("/metadata: introduced in 2.16" in p for p in found), found)
        self.assertEqual(problems("PUT", INSTANCE + "/service_bindings/b", 201,
                                  {"credentials": {}, "endpoints": []},
                                  {"service_id": "s", "plan_id": "p"}, headers=old), [])

    def test_raises_with_endpoint_and_status_and_counts(self):
        before = sum(oc.REPORT.as_dict()["checked"].values())
        with self.assertRaises(oc.ConformanceError) as caught:
            oc.check("GET", "/v2/catalog", V217, None, 200, JSON, b'{"services": 1}')
        self.assertIn("GET /v2/catalog (API 2.17) -> 200", str(caught.exception))
        self.assertEqual(sum(oc.REPORT.as_dict()["checked"].values()), before + 1)

    def test_exceptions_name_operations_of_the_document(self):
        ids = {op.operation_id for op in oc.document().operations}
        for table in (oc.STATUS_EXCEPTIONS, oc.REQUEST_EXCEPTIONS, oc.VERSIONED_FIELDS):
            for entry in table:
                self.assertIn(entry[0], ids | {"*"}, entry)
        for operation_id, status, section in oc.STATUS_EXCEPTIONS:
            responses = ([op.spec["responses"] for op in oc.document().operations
                          if op.operation_id == operation_id] or [{}])[0]
            self.assertNotIn(str(status), responses, "listed already: %r" % (status,))
            self.assertTrue(section)


if __name__ == "__main__":
    unittest.main()
