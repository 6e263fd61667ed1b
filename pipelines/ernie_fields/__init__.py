"""The embedded ERNIE field-type model (``model/``) and its card (``README.md``);
``recipes/ernie_fields`` builds them (not installed)."""
