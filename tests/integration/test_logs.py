"""Logs an on-call person can act on (issue 21): error requests name their reason, first words
and client; failed authentication is a warning; OSBQ_LOG_FORMAT=json writes the same fields as
JSON; a misspelt OSBQ_ variable is warned about; a bad OSBQ_LOG_FORMAT stops the start."""

import json
import unittest

import harness


def line_with(log, text):
    lines = [l for l in log.splitlines() if text in l]
    return lines[-1] if lines else None


class LogfmtLogs(harness.GatewayTestCase):
    EXTRA_ENV = {"OSBQ_WORKER_CONCURENCY": "3", "OSBQ_REDIS_SERVICE_HOST": "10.0.0.7"}

    def wait_line(self, text):
        harness.wait_until(lambda: line_with(self.gateway.log(), text) is not None, 5,
                           "a log line with %s" % text)
        return line_with(self.gateway.log(), text)

    def test_401_is_a_warning_with_reason_and_client(self):
        r = self.client.request("GET", "/v2/catalog", auth=False,
                                headers={"X-Broker-API-Request-Identity": "logs-401"})
        self.assertEqual(r.status, 401)
        line = self.wait_line("request_id=logs-401")
        for field in ("level=warn", "status=401", "reason=UNAUTHORIZED", "client=127.0.0.1",
                      'detail="Authentication failed'):
            self.assertIn(field, line)
        self.assertNotIn("s3cret", line)

    def test_400_has_reason_and_first_words(self):
        r = self.client.request("PUT", "/v2/service_instances/logs-400?accepts_incomplete=true",
                                body=b"{not json",
                                headers={"X-Broker-API-Request-Identity": "logs-400"})
        self.assertEqual(r.status, 400)
        line = self.wait_line("request_id=logs-400")
        words = " ".join(r.json()["description"].split()[:3])
        for field in ("level=info", "status=400", "reason=BAD_REQUEST", "client=127.0.0.1",
                      'detail="' + words):
            self.assertIn(field, line)

    def test_success_line_has_client_and_no_reason(self):
        self.client.request("GET", "/v2/catalog",
                            headers={"X-Broker-API-Request-Identity": "logs-200"})
        line = self.wait_line("request_id=logs-200")
        self.assertIn("client=127.0.0.1", line)
        self.assertNotIn("reason=", line)

    def test_misspelt_variable_is_warned_about_with_the_suggestion(self):
        line = self.wait_line("OSBQ_WORKER_CONCURENCY")
        self.assertIn("level=warn", line)
        self.assertIn("OSBQ_WORKER_CONCURRENCY", line)
        # Variables some daemon or backend reads are not warned about.
        self.assertIsNone(line_with(self.gateway.log(), "OSBQ_BROKER_PASSWORD is set"))
        # Nor Kubernetes' service-link variables.
        self.assertIsNone(line_with(self.gateway.log(), "OSBQ_REDIS_SERVICE_HOST"))


class JsonLogs(harness.GatewayTestCase):
    EXTRA_ENV = {"OSBQ_LOG_FORMAT": "json"}

    def test_every_line_is_json_with_the_same_fields(self):
        r = self.client.request("GET", "/v2/catalog", auth=False,
                                headers={"X-Broker-API-Request-Identity": "logs-json"})
        self.assertEqual(r.status, 401)
        harness.wait_until(lambda: "logs-json" in self.gateway.log(), 5, "the access log")
        records = [json.loads(l) for l in self.gateway.log().splitlines() if l.startswith("{")]
        self.assertTrue(records)
        for line in self.gateway.log().splitlines():
            if line.strip():
                json.loads(line)
        entry = [e for e in records if e.get("request_id") == "logs-json"][0]
        self.assertEqual(entry["msg"], "request")
        self.assertEqual(entry["level"], "warn")
        self.assertEqual(entry["status"], 401)
        self.assertEqual(entry["reason"], "UNAUTHORIZED")
        self.assertEqual(entry["client"], "127.0.0.1")
        self.assertTrue(entry["detail"].startswith("Authentication failed"))
        for key in ("ts", "proc", "method", "path", "duration_us"):
            self.assertIn(key, entry)


class BadLogFormat(unittest.TestCase):
    def test_bad_format_stops_the_gateway_naming_the_variable(self):
        stack = harness.Stack()
        try:
            env = stack.env(OSBQ_LOG_FORMAT="yaml",
                            OSBQ_LISTEN="127.0.0.1:%d" % harness.free_port(),
                            OSBQ_BUS_BIND="tcp://127.0.0.1:%d" % harness.free_port())
            status, out = harness.run_once([harness.GATEWAY], env)
        finally:
            stack.stop()
        self.assertNotEqual(status, 0, out)
        lines = [l for l in out.splitlines() if l.strip()]
        self.assertEqual(len(lines), 1, out)
        self.assertIn("OSBQ_LOG_FORMAT", lines[0])
        self.assertIn("yaml", lines[0])


if __name__ == "__main__":
    unittest.main()
