"""The shop app: orders (``models``), their fulfilment workflow (``flows``), the order view (``views``)."""
