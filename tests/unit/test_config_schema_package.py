"""serving.config.schema is a package, one module per block of the file; every name the
single schema.py module defined is still importable from the package itself."""

import importlib
import pkgutil

import serving.config.schema as schema

# what schema.py defined (public names) before it was split by block
NAMES_BEFORE_THE_SPLIT = {
    "DEVICE_TYPE_NAMES",
    "HEADER_PATTERN",
    "NAME_PATTERN",
    "OP_ALIASES",
    "DagConfig",
    "HttpConf",
    "LocalServiceConf",
    "OpConfig",
    "RoutingConf",
    "SecurityConf",
    "ServingConfig",
    "ShadowConf",
    "TensorRTConf",
    "TracerConf",
    "TrtShape",
    "device_type_value",
    "is_int",
    "is_number",
}


def test_every_name_of_the_old_module_is_exported_by_the_package():
    assert set(schema.__all__) == NAMES_BEFORE_THE_SPLIT
    for name in NAMES_BEFORE_THE_SPLIT:
        assert getattr(schema, name) is not None, name


def test_the_package_re_exports_the_block_modules_objects():
    """One object per name: the package's name is the block module's own (no copies)."""
    for info in pkgutil.iter_modules(schema.__path__):
        module = importlib.import_module(f"{schema.__name__}.{info.name}")
        for name, value in vars(module).items():
            if name in NAMES_BEFORE_THE_SPLIT:
                assert getattr(schema, name) is value, f"{info.name}.{name}"
