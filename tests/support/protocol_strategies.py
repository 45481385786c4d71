"""Hypothesis strategies for protocol messages, built from fastkc's declarations.

`message_values("Fetch", 13, response=True)` draws a body dict exactly as the
codec decodes it: every declared field present, fields absent from the
version at their defaults, tagged fields sometimes left at their default (so
they are not sent), nullable fields sometimes None, and in flexible versions
sometimes unknown tagged fields under "_unknown_tags". Encoding such a value
and decoding it must give it back unchanged; the compiled Fetch parser uses
the same strategy (encode with the codec, parse with C, compare).
"""
from hypothesis import strategies as st

from fastkc.protocol.codec import UNKNOWN_TAGS
from fastkc.protocol.messages import ALL_APIS, get_api
from fastkc.protocol.schema import in_range

_INT_RANGES = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "uint16": (0, 2**16 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "uint32": (0, 2**32 - 1),
    "int64": (-(2**63), 2**63 - 1),
}

# no surrogates: they cannot be encoded as UTF-8
_TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=8)

# tags no declared field uses, to exercise the skipping of unknown tags
_UNKNOWN_TAG_NUMBERS = st.integers(min_value=20, max_value=300)


def _primitive(type_):
    if type_ in _INT_RANGES:
        lo, hi = _INT_RANGES[type_]
        return st.integers(min_value=lo, max_value=hi)
    if type_ == "bool":
        return st.booleans()
    if type_ == "float64":
        return st.floats(allow_nan=False)
    if type_ == "string":
        return _TEXT
    if type_ in ("bytes", "records"):
        return st.binary(max_size=24)
    if type_ == "uuid":
        return st.binary(min_size=16, max_size=16)
    raise AssertionError(type_)


def _field_value(f, version, flexible, max_items):
    if f.type == "array":
        if isinstance(f.item, str):
            item = _primitive(f.item)
        else:
            item = struct_values(f.item, version, flexible, max_items)
        value = st.lists(item, max_size=max_items)
    elif f.type == "struct":
        value = struct_values(f.struct, version, flexible, max_items)
    else:
        value = _primitive(f.type)
    if f.is_nullable(version):
        value = st.none() | value
    if f.tag is not None:
        value = st.builds(f.default) | value
    return value


def struct_values(struct, version, flexible, max_items=3):
    entries = {}
    for f in struct.fields:
        if in_range(version, f.versions):
            entries[f.name] = _field_value(f, version, flexible, max_items)
        else:
            entries[f.name] = st.builds(f.default)
    plain = st.fixed_dictionaries(entries)
    if not flexible:
        return plain
    unknown = st.dictionaries(_UNKNOWN_TAG_NUMBERS, st.binary(max_size=8), min_size=1, max_size=2)
    with_unknown = st.builds(lambda d, u: dict(d, **{UNKNOWN_TAGS: u}), plain, unknown)
    return st.one_of(plain, plain, with_unknown)


def message_values(api_name, version, *, response, max_items=3, unknown_tags=True):
    api = get_api(api_name)
    struct = api.response if response else api.request
    strategy = struct_values(struct, version, api.is_flexible(version), max_items)
    if not unknown_tags:
        strategy = strategy.map(strip_unknown_tags)
    return strategy


def strip_unknown_tags(value):
    """A copy of a message value without any "_unknown_tags" entries."""
    if isinstance(value, dict):
        return {k: strip_unknown_tags(v) for k, v in value.items() if k != UNKNOWN_TAGS}
    if isinstance(value, list):
        return [strip_unknown_tags(v) for v in value]
    return value


# Every declared (API name, version, response?) of the schemas: the cases the
# codec's property tests run over, with a readable test id.
MESSAGE_CASES = [
    (api.name, version, response)
    for api in ALL_APIS
    for version in range(api.min_version, api.max_version + 1)
    for response in (False, True)
]


def message_case_id(case):
    name, version, response = case
    return "{0}{1}-v{2}".format(name, "Response" if response else "Request", version)
