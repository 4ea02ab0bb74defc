"""Bokeh's stable property defaults, kept once per process (server/patches/bokeh_property_descriptor.py,
bokeh_has_props.py, bokeh_serializer.py), and a page's patch read without a table of every model
(bokeh_apply_patch.py): same values, fewer reads."""

from __future__ import annotations

import contextvars
import re
from unittest import mock

import pytest
from bokeh.core.has_props import HasProps
from bokeh.core.json_encoder import serialize_json
from bokeh.core.property.bases import Property
from bokeh.core.property.descriptors import PropertyDescriptor
from bokeh.core.property.singletons import Undefined
from bokeh.core.serialization import Deserializer, Serializer, UnknownReferenceError
from bokeh.document import Document
from bokeh.model import Model
from bokeh.models import CDSView, Column, ColumnDataSource, Div, GlyphRenderer, Plot, Scatter, Slider
from bokeh.protocol import Protocol
from bokeh.themes import Theme

import app
from server.patches import bokeh_apply_patch, bokeh_has_props, bokeh_property_descriptor, bokeh_serializer


def _bokeh_default(descriptor, obj):
    """Bokeh's own answer for an unset property: its ``_get_default`` as shipped, on a fresh object."""
    return PropertyDescriptor._get_default.original(descriptor, obj)


def test_installed_once():
    assert PropertyDescriptor._get_default.keeps_stable_defaults
    # already in place since the app was imported: not wrapped twice
    assert [m.install() for m in (bokeh_property_descriptor, bokeh_has_props, bokeh_serializer)] == [False] * 3


def test_a_stable_default_is_worked_out_once_per_class():
    names = ("margin", "align", "visible", "disabled")
    expected = [_bokeh_default(Div.lookup(n), Div()) for n in names]
    [getattr(Div(), n) for n in names]  # the first reads keep them
    div = Div()
    with mock.patch.object(Property, "themed_default", autospec=True,
                           side_effect=Property.themed_default) as worked_out:
        assert [getattr(div, n) for n in names] == expected
    assert worked_out.call_count == 0


def test_every_model_of_a_page_reads_what_bokeh_would():
    doc = Document()
    doc.add_root(app.create_app().get_root(doc))
    classes = {type(m) for m in doc.models}
    assert len(classes) > 20
    for cls in classes:
        for name in cls.properties():
            descriptor = cls.lookup(name)
            kept, fresh = cls(), cls()
            if name in fresh._property_values:  # set by the constructor itself
                continue
            expected = _bokeh_default(descriptor, fresh)
            if expected is Undefined:  # a required property: no default to keep
                continue
            getattr(kept, name)  # the first read keeps it
            read = getattr(kept, name)
            assert type(read) is type(expected), (cls.__name__, name)
            if isinstance(expected, HasProps):  # a model made per object: one of the same kind, not the same one
                assert read is not getattr(fresh, name), (cls.__name__, name)
            else:
                assert read == expected or (read != read and expected != expected), (cls.__name__, name)  # NaN


def _page_json() -> str:
    """A built page's serialised document, with the ids and Panel's numbered names that differ between builds
    taken out."""
    doc = Document()
    doc.add_root(app.create_app().get_root(doc))
    text = serialize_json(doc.to_json(deferred=False))
    # and the Python ids Panel tags a callback of its own with (a jscallback's tags)
    text = re.sub(r"\[\[\d{9,},", "[[PYID,", text)
    return re.sub(r'"([A-Za-z]+)\d{5}"', r'"\1"', re.sub(r"p\d{3,}", "ID", text))


def test_a_page_serialises_as_with_bokehs_own_code():
    ours = _page_json()
    with mock.patch.object(HasProps, "query_properties_with_values", HasProps.query_properties_with_values.original), \
            mock.patch.object(PropertyDescriptor, "_get_default", PropertyDescriptor._get_default.original), \
            mock.patch.object(PropertyDescriptor, "has_unstable_default",
                              PropertyDescriptor.has_unstable_default.original), \
            mock.patch.object(PropertyDescriptor, "__set__", PropertyDescriptor.__set__.original):
        bokehs = _page_json()
    assert len(ours) > 100_000
    assert ours == bokehs


def test_defaults_made_per_object_stay_per_object():
    a, b = ColumnDataSource(), ColumnDataSource()
    assert a.selected is not b.selected  # a model default: one each
    assert a.data is not b.data
    a.data["x"] = [1]
    assert dict(b.data) == {}
    c, d = Div(), Div()
    c.css_classes.append("x")
    assert d.css_classes == []


def test_an_empty_list_made_per_object_is_made_without_bokehs_copy_and_checks_and_still_reports_its_changes():
    Div()  # the first of a class has its empty defaults made by Bokeh's code (a Div makes ten as it is made)
    with mock.patch.object(Property, "themed_default", autospec=True,
                           side_effect=Property.themed_default) as worked_out:
        div, other = Div(), Div()
    assert worked_out.call_count == 0
    doc = Document()
    doc.add_root(div)
    classes, tags = div.css_classes, div.tags
    expected = _bokeh_default(Div.lookup("css_classes"), Div())
    assert type(classes) is type(expected) and classes == expected == []
    assert div.css_classes is classes and other.css_classes is not classes and tags is not classes
    assert "css_classes" not in div.properties_with_values(include_defaults=False)  # an unchanged default: not sent
    events = []
    doc.on_change(events.append)
    classes.append("x")  # as a view appends to a figure's list: Bokeh's change, sent
    assert [(e.attr, list(e.new)) for e in events] == [("css_classes", ["x"])]
    assert div.properties_with_values(include_defaults=False)["css_classes"] == ["x"] and other.css_classes == []


def test_a_theme_still_wins():
    Div().margin  # noqa: B018
    doc = Document()
    doc.theme = Theme(json={"attrs": {"Div": {"margin": 7, "align": "center"}}})
    div = Div()
    doc.add_root(div)
    assert (div.margin, div.align) == (7, "center")
    doc.remove_root(div)
    assert Div().align == "auto"


def test_serialising_reads_only_what_it_sends():
    div = Div(text="a")
    with mock.patch.object(PropertyDescriptor, "get_value", autospec=True,
                           side_effect=PropertyDescriptor.get_value) as read:
        sent = div.properties_with_values(include_defaults=False)
    assert sent == {"text": "a"}
    # the set property and those Bokeh made for this Div (its lists and dicts), not every one of its properties
    assert read.call_count == len(div._property_values) + len(div._unstable_default_values) < len(Div.properties())


def test_a_model_given_to_a_constructor_makes_no_default_model_to_compare_with():
    view = CDSView()
    with mock.patch.object(CDSView, "__init__", autospec=True, side_effect=CDSView.__init__) as made:
        renderer = GlyphRenderer(data_source=ColumnDataSource(), glyph=Scatter(), view=view)
    assert renderer.view is view and made.call_count == 0
    assert "view" in renderer.properties_with_values(include_defaults=False)  # set, so sent
    assert Plot(title=None).title is None  # None for a model default is still a value of its own


def _patch_json() -> str:
    """An update of a built page that names a model the page has and one it has not, serialised as the server
    sends it; ids taken out as in _page_json."""
    from bokeh.models import Column
    from bokeh.protocol import Protocol

    doc = Document()
    doc.add_root(app.create_app().get_root(doc))
    div = Div(text="before")
    column = Column(children=[div])
    doc.add_root(column)
    doc.to_json()
    doc.models.flush_synced()  # the page has every model now
    events = []
    doc.on_change(events.append)
    div.text = "changed"
    column.children = [*column.children, Div(text="new")]
    text = Protocol().create("PATCH-DOC", events).content_json
    return re.sub(r"p\d{3,}", "ID", text)


def test_a_patch_serialises_as_with_bokehs_own_code():
    """Bokeh's own serialiser makes a reference for every model of the document first: the same message."""
    ours = _patch_json()
    with mock.patch.object(Serializer, "__init__", Serializer.__init__.original):
        bokehs = _patch_json()
    assert '"changed"' in ours and '"attributes":{"text":"new"}' in ours and ours == bokehs
    assert isinstance(Serializer(references={Div()})._references, bokeh_serializer.LazyRefs)


def _page_patch(events: list[dict]) -> dict:
    """A page's PATCH-DOC content as BokehJS writes it: each event names its model by reference."""
    return {"events": events}


def test_a_pages_patch_resolves_its_models_in_the_document_without_a_table_of_them_all():
    """What the page sent is applied to the same models as with Bokeh's own table of every model, and an id the
    document does not hold is Bokeh's own error; no deserialiser of the patch reads every model's id."""
    bokeh_apply_patch.install()  # as the server does at its start (server/patches/__init__.py)

    def applied(original: bool):
        doc = Document()
        source, div = ColumnDataSource(data=dict(x=[0.0], y=[1.0])), Div(text="before")
        doc.add_root(Plot(renderers=[GlyphRenderer(data_source=source, glyph=Scatter(), view=CDSView())]))
        doc.add_root(div)
        ids_read = []
        id_property = Model.id

        def counting(model):
            ids_read.append(model)
            return id_property.fget(model)

        patch = _page_patch([
            {"kind": "ModelChanged", "model": {"id": source.id}, "attr": "data",
             "new": {"type": "map", "entries": [["x", [0.25]], ["y", [0.75]]]}},
            {"kind": "ModelChanged", "model": {"id": div.id}, "attr": "text", "new": "after"}])
        apply = Document.apply_json_patch.original if original else Document.apply_json_patch
        with mock.patch.object(Model, "id", property(counting)):
            ids_read.clear()
            apply(doc, patch)
            read = len(ids_read)
        with pytest.raises(UnknownReferenceError):
            apply(doc, _page_patch([{"kind": "ModelChanged", "model": {"id": "p99999"}, "attr": "text", "new": "x"}]))
        return dict(source.data), div.text, read, len(doc.models)

    ours, bokehs = applied(original=False), applied(original=True)
    assert ours[:2] == bokehs[:2] == ({"x": [0.25], "y": [0.75]}, "after")
    # Bokeh's table read the id of every model the document holds, once more than what the events' handling reads
    assert bokehs[2] - ours[2] == bokehs[3] == 15
    assert type(Deserializer([Div()])._references) is dict  # outside a document's patch, Bokeh's own table


def test_a_model_the_server_adds_while_a_pages_patch_is_applied_is_sent_to_the_page_in_full():
    """The page moves a slider; the server's callback adds a Div to the page and holds the change (as a Panel hold, or
    Panel's writes queued behind a busy socket, sends it later). After the patch, the Div reaches the page written out
    in full, as with Bokeh's own table: looked up in the document as it is after the events, it counted as a model the
    page already had, and the page was sent its reference alone."""
    bokeh_apply_patch.install()

    def sent(original: bool) -> list:
        doc = Document()
        slider = Slider(start=0, end=10, value=1)
        column = Column(children=[slider])
        doc.add_root(column)
        doc.models.flush_synced()  # the page has pulled the document
        added = Div(text="added")

        def add_held(attr, old, new):
            doc.hold()
            column.children = [slider, added]

        slider.on_change("value", add_held)
        messages = []
        doc.on_change(lambda event: messages.append(Protocol().create("PATCH-DOC", [event]).content))
        apply = Document.apply_json_patch.original if original else Document.apply_json_patch
        apply(doc, _page_patch([{"kind": "ModelChanged", "model": {"id": slider.id}, "attr": "value", "new": 5}]))
        doc.unhold()
        # the Div as the page is sent it, its id aside (each document numbers its models anew)
        return [{k: v for k, v in event["new"][1].items() if k != "id"}
                for m in messages for event in m["events"] if event.get("attr") == "children"]

    in_full = [{"type": "object", "name": "Div", "attributes": {"text": "added"}}]
    assert sent(original=True) == in_full  # Bokeh's own table
    assert sent(original=False) == in_full


def test_a_deserialiser_made_while_a_pages_patch_is_handled_is_bokehs_own():
    """Only the patch's own deserialiser looks its models up in the document: one that the events' handling makes, and
    one made later by a callback scheduled meanwhile (asyncio runs it in a copy of the context it was scheduled in),
    resolve the models they are given."""
    bokeh_apply_patch.install()
    doc, given = Document(), Div(text="given")
    slider = Slider(start=0, end=10, value=1)
    doc.add_root(slider)
    made, scheduled = [], []

    def handle(attr, old, new):
        made.append(Deserializer([given]))
        scheduled.append(contextvars.copy_context())  # as loop.call_soon keeps it

    slider.on_change("value", handle)
    Document.apply_json_patch(doc, _page_patch([{"kind": "ModelChanged", "model": {"id": slider.id}, "attr": "value",
                                                 "new": 5}]))
    made.append(scheduled[0].run(Deserializer, [given]))
    assert [type(d._references) for d in made] == [dict, dict]
    assert [d.deserialize({"id": given.id}) for d in made] == [given, given]
