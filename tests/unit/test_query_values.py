"""app.validation.query_values: webargs' rule for repeated query parameters, in a plain dict."""

from __future__ import annotations

from marshmallow import Schema, fields
from werkzeug.datastructures import MultiDict

from app.validation import TRANSPORT_PARAMETERS, multiple_keys, query_values


class Args(Schema):
    tags = fields.List(fields.String())
    pair = fields.Tuple((fields.String(), fields.String()), data_key="p")
    flagged = fields.String(metadata={"note": "is_multiple set on the field"})
    name = fields.String()


def test_list_fields_keep_every_value_others_the_first():
    schema = Args()
    schema.fields["flagged"].is_multiple = True  # webargs' documented per-field switch
    args = MultiDict([("tags", "a"), ("tags", "b"), ("p", "x"), ("p", "y"), ("name", "n1"), ("name", "n2")])
    assert query_values(args, schema) == {"tags": ["a", "b"], "p": ["x", "y"], "name": "n1"}
    assert multiple_keys(schema) == {"tags", "p", "flagged"}  # data_key, not the attribute name


def test_skip_leaves_the_transport_parameters_out():
    args = MultiDict([("cmd", "routing"), ("name", "n"), ("unknown", "u")])
    assert query_values(args, Args(), skip=TRANSPORT_PARAMETERS) == {"name": "n", "unknown": "u"}
