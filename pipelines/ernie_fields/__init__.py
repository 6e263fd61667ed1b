"""Build script and data generator for the embedded ERNIE field-type model."""
