"""One module per function both faces serve: its schemas, its :class:`~app.registry.Function`
and its gateway view (``app/functions/<name>.py``); ``app.FUNCTION_MODULES`` lists them."""
