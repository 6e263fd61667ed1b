"""Build script and data generator for the embedded ERNIE field-type model
(``pipelines/ernie_fields/model``): ``python -m recipes.ernie_fields.build``."""
