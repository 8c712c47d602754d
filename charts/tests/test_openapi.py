"""The REST API's OpenAPI documents (`opencrane openapi --role fleet|silo`, the same document each
role serves at /api/v1/openapi.json): valid OpenAPI 3.1 by openapi-spec-validator, every
operation with a unique operationId, a tag, a success and an error response, and every path
and query parameter declared; the CSV export declared as text/csv."""

import json
import os
import re
import subprocess
import unittest

from openapi_spec_validator import validate

BIN = os.environ.get("OPENCRANE_BIN", "target/debug/opencrane")


def document(role):
    out = subprocess.run([BIN, "openapi", "--role", role], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


class OpenApi(unittest.TestCase):
    def test_both_documents_are_valid_openapi_3_1(self):
        for role in ("fleet", "silo"):
            with self.subTest(role=role):
                doc = document(role)
                self.assertEqual(doc["openapi"], "3.1.0")
                validate(doc)

    def test_every_operation_is_named_tagged_and_answers(self):
        for role in ("fleet", "silo"):
            ids = []
            for path, item in document(role)["paths"].items():
                for method, op in item.items():
                    with self.subTest(role=role, op=f"{method} {path}"):
                        ids.append(op["operationId"])
                        self.assertTrue(op["tags"])
                        self.assertIn("default", op["responses"], "the error envelope")
                        if op.get("deprecated"):
                            # A retired route answers 410 naming what replaces it.
                            self.assertIn("410", op["responses"])
                        else:
                            self.assertTrue(any(code.startswith(("2", "3")) for code in op["responses"]))
                        declared = {p["name"] for p in op.get("parameters", []) if p["in"] == "path"}
                        wanted = {seg[1:-1] for seg in path.split("/") if seg.startswith("{")}
                        self.assertEqual(declared, wanted)
            self.assertEqual(len(ids), len(set(ids)), f"{role}: operationIds are unique")

    def test_every_list_documents_its_paging(self):
        for role in ("fleet", "silo"):
            lists = 0
            for path, item in document(role)["paths"].items():
                op = item.get("get")
                ok = op and next((r for c, r in op["responses"].items() if c == "200"), None)
                schema = ok and ok["content"].get("application/json", {}).get("schema", {})
                if schema and schema.get("type") == "array":
                    lists += 1
                    with self.subTest(role=role, path=path):
                        names = {p["name"] for p in op.get("parameters", []) if p["in"] == "query"}
                        self.assertTrue({"limit", "offset"} <= names)
                        self.assertIn("X-Total-Count", ok["headers"])
            self.assertGreater(lists, 0, role)

    def test_every_query_parameter_a_summary_names_is_declared(self):
        for role in ("fleet", "silo"):
            for path, item in document(role)["paths"].items():
                for method, op in item.items():
                    named = set(re.findall(r"[?&]([A-Za-z]+)=", op["summary"]))
                    with self.subTest(role=role, op=f"{method} {path}", named=sorted(named)):
                        declared = {p["name"] for p in op.get("parameters", []) if p["in"] == "query"}
                        self.assertLessEqual(named, declared)

    def test_the_csv_export_is_declared_as_csv(self):
        op = document("silo")["paths"]["/api/v1/ai-budget/spend.csv"]["get"]
        self.assertIn("text/csv", op["responses"]["200"]["content"])

    def test_the_original_clients_shapes_are_described(self):
        schemas = document("silo")["components"]["schemas"]
        self.assertIn("monthlyLimitUsd", schemas["GlobalCeiling"]["properties"])
        self.assertIn("isDefault", schemas["DeploymentRequest"]["properties"])
        self.assertIn("global", schemas["DefaultRequest"]["properties"]["scope"]["enum"])


if __name__ == "__main__":
    unittest.main()
