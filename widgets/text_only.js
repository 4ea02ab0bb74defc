// A Div's view that replaces only its text when the text changes (widgets/steps.py, replace_text_in_place):
// run by the Div's CustomJS on a change of its text, with cb_obj the Div.
let view = cb_obj.textOnlyView;
if (view == null || view.is_destroyed) view = cb_obj.textOnlyView = Bokeh.index.find_one(cb_obj);
if (view != null && !view.textOnly) {
  view.textOnly = true;
  // the same text (the server confirming what the drag preview shows) is left alone: even an equal
  // text would be a new text node, and the page would lay out and paint again
  view.rerender = function () {
    const el = this.markup_el;
    if (el != null && el.textContent !== this.model.text) el.textContent = this.model.text;
  };
}
