"""serving.config.file_set and the repository keys of a file (version, routing,
share): several files checked as one server, every check's message naming the
file and the key, and the fingerprints reload and sharing rely on."""

import textwrap

import pytest

from serving.config import (
    ConfigError,
    ServingConfig,
    expand_sources,
    load_config,
    load_repository,
    op_fingerprint,
    parse_config,
    pipeline_fingerprint,
    repository_of,
)

FAKE = "tests.support.config_fakes:FakeOp"
FAKE_MODEL = "tests.support.config_fakes:FakeModelOp"


def write(directory, name, text):
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(textwrap.dedent(text))
    return str(path)


def pipe(directory, name, head="", ops=None):
    """A config file ``name``.yml: ``head`` (top-level keys) and ops (default: one FakeOp 'a')."""
    ops = ops or {"a": f"{{class: {FAKE}}}"}
    body = "".join(f"  {op}: {conf}\n" for op, conf in ops.items())
    return write(directory, f"{name}.yml", f"name: {name.split('@')[0]}\n{textwrap.dedent(head)}op:\n{body}")


def repo_error(paths):
    with pytest.raises(ConfigError) as info:
        load_repository(paths)
    return info.value


def make_model(path, files=("inference.pdmodel", "inference.pdiparams")):
    path.mkdir(parents=True, exist_ok=True)
    for name in files:
        (path / name).write_bytes(b"x")
    return path


def parsed(data, source="c.yml"):
    data.setdefault("op", {"a": {"class": FAKE}})
    return parse_config(data, source=source)


def parse_error(data):
    with pytest.raises(ConfigError) as info:
        parsed(data)
    return str(info.value)


# ---------------------------------------------------------------------------
# the keys of one file
# ---------------------------------------------------------------------------
def test_version_and_effective_version():
    assert parsed({}).version is None and parsed({}).effective_version == 1
    assert parsed({"version": 3}).effective_version == 3
    assert parse_error({"version": 0}) == "c.yml: version: must be >= 1, got 0"
    assert parse_error({"version": "2"}) == "c.yml: version: must be an integer, got '2'"


def test_routing_section_defaults():
    config = parsed({"routing": {"weights": {1: 80, 2: 20}, "shadow": {"version": 3}}})
    routing = config.routing
    assert routing.weights == {1: 80, 2: 20} and routing.default is None and routing.key_header == "X-Route-Key"
    assert (routing.shadow.version, routing.shadow.sample, routing.shadow.max_in_flight) == (3, 1.0, 4)
    assert parsed({}).routing is None and parsed({"routing": None}).routing is None


@pytest.mark.parametrize(
    "routing, line",
    [
        ({"weights": {1: -1}}, "routing.weights.1: weight must be an integer >= 0, got -1"),
        ({"weights": {1: "x"}}, "routing.weights.1: weight must be an integer >= 0, got 'x'"),
        ({"weights": {"1": 5}}, "routing.weights.1: must be a version (an integer >= 1), got '1'"),
        ({"weights": {0: 5}}, "routing.weights.0: must be a version (an integer >= 1), got 0"),
        ({"weights": {1: 0, 2: 0}}, "routing.weights: must not all be 0"),
        ({"weights": {}}, "routing.weights: must give a weight to at least one version, or be left out"),
        ({"weights": [1]}, "routing.weights: must be a mapping, got [1]"),
        ({"wieghts": {1: 1}}, "routing.wieghts: unknown key (did you mean 'weights'?)"),
        ({"default": 0}, "routing.default: must be >= 1, got 0"),
        (
            {"default": 2, "weights": {1: 1, 2: 0}},
            "routing.default: version 2 gets no traffic under routing.weights; drop one of the two",
        ),
        ({"key_header": "X Key"}, "routing.key_header: must match ^[A-Za-z0-9-]+$, got 'X Key'"),
        ({"shadow": {}}, "routing.shadow.version: required key missing"),
        ({"shadow": {"version": 2, "sample": 0}}, "routing.shadow.sample: must be > 0, got 0"),
        ({"shadow": {"version": 2, "sample": 1.5}}, "routing.shadow.sample: must be <= 1, got 1.5"),
        ({"shadow": {"version": 2, "max_in_flight": 0}}, "routing.shadow.max_in_flight: must be >= 1, got 0"),
        ({"shadow": {"version": 2, "smaple": 1}}, "routing.shadow.smaple: unknown key (did you mean 'sample'?)"),
        (
            {"weights": {1: 50, 2: 50}, "shadow": {"version": 2}},
            "routing.shadow.version: version 2 is the shadow, so its routing.weights entry must be 0",
        ),
        (
            {"default": 2, "shadow": {"version": 2}},
            "routing.shadow.version: version 2 is the shadow, so it cannot be routing.default",
        ),
    ],
)
def test_routing_errors_name_the_key(routing, line):
    assert parse_error({"routing": routing}) == f"c.yml: {line}"


def test_share_and_share_name():
    ops = {"a": {"class": FAKE, "share": True}, "b": {"class": FAKE, "share": "ocr_det"}, "c": {"class": FAKE}}
    config = parsed({"op": ops})
    assert [op.share_name for op in config.ops] == ["a", "ocr_det", None]
    assert parsed({"op": {"a": {"class": FAKE, "share": False}}}).op["a"].share_name is None


@pytest.mark.parametrize(
    "share, message",
    [
        (1, "must be true, false or a share name, got 1"),
        ("", "a share name must match ^[A-Za-z0-9_.-]+$, got ''"),
        ("a b", "a share name must match ^[A-Za-z0-9_.-]+$, got 'a b'"),
    ],
)
def test_share_errors(share, message):
    assert parse_error({"op": {"a": {"class": FAKE, "share": share}}}) == f"c.yml: op.a.share: {message}"


def test_paddle_serving_pass_keeps_the_new_keys():
    data = {
        "rpc_port": 18091,
        "version": 2,
        "routing": {"weights": {2: 1}},
        "op": {"a": {"class": FAKE, "share": "x", "batch_size": 4, "local_service_conf": {"client_type": "x"}}},
    }
    config = parsed(data)
    assert config.version == 2 and config.routing.weights == {2: 1}
    assert config.op["a"].share_name == "x" and config.op["a"].local_service_conf.max_batch_size == 4


# ---------------------------------------------------------------------------
# ConfigError over several files
# ---------------------------------------------------------------------------
def test_combined_error_keeps_problems_per_file():
    err = ConfigError.combine(
        [
            ConfigError.many("a.yml", [("x", "one"), ("y", "two")]),
            ConfigError("b.yml", "z", "three"),
            ConfigError("a.yml", "w", "four"),
        ]
    )
    assert str(err).splitlines() == ["a.yml: x: one", "a.yml: y: two", "a.yml: w: four", "b.yml: z: three"]
    assert err.by_source == {"a.yml": [("x", "one"), ("y", "two"), ("w", "four")], "b.yml": [("z", "three")]}
    assert err.source == "a.yml" and err.key == "x" and len(err.problems) == 4
    single = ConfigError("c.yml", "k", "m")
    assert single.by_source == {"c.yml": [("k", "m")]} and single.problems == [("k", "m")]


# ---------------------------------------------------------------------------
# sources
# ---------------------------------------------------------------------------
def test_a_directory_is_its_yml_and_yaml_files_sorted(tmp_path):
    conf = tmp_path / "conf"
    b = write(conf, "b.yml", "")
    a = write(conf, "a.yaml", "")
    write(conf, ".hidden.yml", "")
    write(conf, "notes.txt", "")
    write(conf / "sub", "c.yml", "")
    other = write(tmp_path, "other.yml", "")
    assert expand_sources([other, str(conf)]) == [other, a, b]
    assert expand_sources([f"{conf}/"]) == [f"{conf}/a.yaml", f"{conf}/b.yml"]  # the spelling given is kept


def test_a_file_named_twice_is_read_once(tmp_path):
    conf = tmp_path / "conf"
    a = write(conf, "a.yml", "")
    assert expand_sources([a, str(conf), a]) == [a]


def test_a_directory_without_configs_is_an_error(tmp_path):
    (tmp_path / "empty").mkdir()
    (tmp_path / "also").mkdir()
    with pytest.raises(ConfigError) as info:
        expand_sources([str(tmp_path / "empty"), str(tmp_path / "also")])
    assert str(info.value).splitlines() == [
        f"{tmp_path / 'empty'}: (file): no *.yml or *.yaml file in this directory",
        f"{tmp_path / 'also'}: (file): no *.yml or *.yaml file in this directory",
    ]


def test_missing_files_are_left_to_the_loader(tmp_path):
    missing = str(tmp_path / "nope.yml")
    assert expand_sources([missing, "pkg://no_such_pkg_xyz/a.yml"]) == [missing, "pkg://no_such_pkg_xyz/a.yml"]
    err = repo_error([missing])
    assert str(err).startswith(f"{missing}: (file): no such file")


def test_pkg_directory(tmp_path, monkeypatch):
    package = tmp_path / "site" / "demo_repo_pkg"
    write(package, "__init__.py", "")
    pipe(package, "one")
    pipe(package, "two")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    assert expand_sources(["pkg://demo_repo_pkg"]) == ["pkg://demo_repo_pkg/one.yml", "pkg://demo_repo_pkg/two.yml"]
    assert list(load_repository(["pkg://demo_repo_pkg"]).routes) == ["one", "two"]


def test_no_arguments_is_an_error():
    assert str(repo_error([])) == "(arguments): (file): no config file or directory given"


# ---------------------------------------------------------------------------
# a valid repository
# ---------------------------------------------------------------------------
def test_repository_of_several_files(tmp_path):
    ocr1 = pipe(tmp_path, "ocr@1", "http_port: 8080\ndag: {max_queue_size: 100}\n")
    ocr2 = pipe(tmp_path, "ocr@2", "version: 2\nworker_num: 4\n")
    ernie = pipe(tmp_path, "ernie", "auth_token: s3cret\nhost: 0.0.0.0\n")
    repo = load_repository([ocr1, ocr2, ernie])
    assert repo.sources == [ocr1, ocr2, ernie] and repo.files == [ocr1, ocr2, ernie]
    assert [(c.name, c.effective_version) for c in repo.pipelines] == [("ocr", 1), ("ocr", 2), ("ernie", 1)]
    assert list(repo.routes) == ["ocr", "ernie"]
    ocr = repo.routes["ocr"]
    assert list(ocr.versions) == [1, 2] and ocr.default == 2 and ocr.weights == {2: 1}
    assert ocr.key_header == "X-Route-Key" and ocr.shadow is None
    assert ocr.config(1) is repo.pipelines[0] and repo.pipeline("ocr", 2) is repo.pipelines[1]
    assert (repo.host, repo.http_port, repo.worker_num, repo.auth_token) == ("0.0.0.0", 8080, 4, "s3cret")
    assert repo.max_queue_size == 100 + 512 + 512 and repo.shares == {}
    with pytest.raises(KeyError, match=r"pipeline 'ocr' has no version 3 \(versions: 1, 2\)"):
        repo.pipeline("ocr", 3)
    with pytest.raises(KeyError, match="no pipeline 'nope'"):
        repo.pipeline("nope", 1)


def test_server_keys_default_when_no_file_sets_them(tmp_path):
    repo = load_repository([pipe(tmp_path, "one"), pipe(tmp_path, "two")])
    defaults = ServingConfig.model_fields
    assert repo.http_port == defaults["http_port"].default and repo.host == defaults["host"].default
    assert repo.worker_num == defaults["worker_num"].default and repo.auth_token is None


def test_routing_weights_default_and_shadow(tmp_path):
    routing = """\
        routing:
          weights: {1: 80, 2: 20, 4: 0}
          key_header: X-User
          shadow: {version: 3, sample: 0.5, max_in_flight: 2}
        """
    files = [pipe(tmp_path, "ocr@1", routing)] + [pipe(tmp_path, f"ocr@{v}", f"version: {v}\n") for v in (2, 3, 4)]
    route = load_repository(files).routes["ocr"]
    assert route.weights == {1: 80, 2: 20}  # weight 0: reached only at /ocr/v4/prediction
    assert route.default == 1 and route.key_header == "X-User"  # the version most traffic goes to
    assert (route.shadow.version, route.shadow.sample, route.shadow.max_in_flight) == (3, 0.5, 2)


def test_explicit_default(tmp_path):
    files = [pipe(tmp_path, "ocr@1", "routing: {default: 1}\n"), pipe(tmp_path, "ocr@2", "version: 2\n")]
    route = load_repository(files).routes["ocr"]
    assert route.default == 1 and route.weights == {1: 1}


def test_the_default_is_never_the_shadow(tmp_path):
    files = [pipe(tmp_path, "ocr@1", "routing: {shadow: {version: 2}}\n"), pipe(tmp_path, "ocr@2", "version: 2\n")]
    route = load_repository(files).routes["ocr"]
    assert route.default == 1 and route.weights == {1: 1} and route.shadow.version == 2


def test_repository_of_one_parsed_config(tmp_path):
    config = load_config(pipe(tmp_path, "ocr", "version: 3\n"))
    repo = repository_of(config)
    assert repo.sources == [config.source_path] and repo.pipelines == [config]
    assert repo.routes["ocr"].default == 3 and repo.routes["ocr"].weights == {3: 1}
    with pytest.raises(ConfigError) as info:
        repository_of(parsed({"routing": {"weights": {1: 1, 2: 1}}}, source="<inline>"))
    assert str(info.value) == "<inline>: routing.weights.2: version 2 of 'pipeline' does not exist (versions: 1)"


# ---------------------------------------------------------------------------
# checks across files
# ---------------------------------------------------------------------------
def test_one_pipeline_per_name_and_version(tmp_path):
    a = pipe(tmp_path, "ocr@a")
    b = pipe(tmp_path, "ocr@b", "version: 1\n")
    c = pipe(tmp_path, "ocr@c", "version: 2\n")
    assert str(repo_error([a, b, c])) == f"{b}: name: pipeline 'ocr' version 1 is already defined in {a}"


def test_versions_of_one_name_take_the_same_input(tmp_path):
    text, image = "tests.support.config_fakes:FakeTextOp", "tests.support.config_fakes:FakeImageOp"
    a = pipe(tmp_path, "ocr@a", "version: 1\n", {"a": f"{{class: {image}}}"})
    b = pipe(tmp_path, "ocr@b", "version: 2\n", {"a": f"{{class: {text}}}"})
    assert str(repo_error([a, b])) == (
        f"{b}: op: version 2 of 'ocr' takes text input, but {a} takes image: versions of one pipeline share its URL"
    )
    c = pipe(tmp_path, "ocr@c", "version: 3\n", {"a": f"{{class: {image}}}"})
    assert [p.effective_version for p in load_repository([a, c]).pipelines] == [1, 3]


@pytest.mark.parametrize(
    "key, mine, theirs, why",
    [
        ("http_port", 8080, 9999, "one server listens on one port"),
        ("host", "0.0.0.0", "127.0.0.1", "one server binds one address"),
        ("worker_num", 4, 8, "one server has one pool of HTTP threads"),
    ],
)
def test_server_keys_must_agree(tmp_path, key, mine, theirs, why):
    a = pipe(tmp_path, "one", f"{key}: {theirs}\n")
    b = pipe(tmp_path, "two", f"{key}: {mine}\n")
    assert str(repo_error([a, b])) == f"{b}: {key}: {mine} conflicts with {theirs} in {a} ({why})"


def test_server_keys_given_once_or_equal_are_fine(tmp_path):
    a = pipe(tmp_path, "one", "http_port: 8080\nauth_token: t\n")
    b = pipe(tmp_path, "two")  # the default 9999 is not a conflict: the file did not set it
    c = pipe(tmp_path, "three", "http_port: 8080\nauth_token: t\n")
    assert load_repository([a, b, c]).http_port == 8080


def test_auth_tokens_conflict_without_showing_them(tmp_path):
    a = pipe(tmp_path, "one", "auth_token: first-secret\n")
    b = pipe(tmp_path, "two", "auth_token: second-secret\n")
    message = str(repo_error([a, b]))
    assert message == f"{b}: auth_token: differs from the auth_token in {a} (one server checks one token)"
    assert "secret" not in message.replace(str(tmp_path), "")


def test_one_routing_section_per_name(tmp_path):
    a = pipe(tmp_path, "ocr@1", "routing: {default: 1}\n")
    b = pipe(tmp_path, "ocr@2", "version: 2\nrouting: {default: 2}\n")
    message = f"{b}: routing: pipeline 'ocr' already has a routing section in {a} (one per pipeline name)"
    assert str(repo_error([a, b])) == message


def test_routing_names_versions_that_exist(tmp_path):
    routing = "routing: {default: 5, weights: {1: 50, 3: 40, 5: 10}, shadow: {version: 4}}\n"
    a = pipe(tmp_path, "ocr@1", routing)
    b = pipe(tmp_path, "ocr@2", "version: 2\n")
    assert str(repo_error([a, b])).splitlines() == [
        f"{a}: routing.default: version 5 of 'ocr' does not exist (versions: 1, 2)",
        f"{a}: routing.weights.3: version 3 of 'ocr' does not exist (versions: 1, 2)",
        f"{a}: routing.weights.5: version 5 of 'ocr' does not exist (versions: 1, 2)",
        f"{a}: routing.shadow.version: version 4 of 'ocr' does not exist (versions: 1, 2)",
    ]


def test_a_shadow_needs_another_version(tmp_path):
    a = pipe(tmp_path, "ocr", "version: 2\nrouting: {shadow: {version: 2}}\n")
    message = f"{a}: routing.shadow.version: version 2 is the only version of 'ocr': the shadow needs another version"
    assert str(repo_error([a])) == message + " to serve"


SHARED_OPS = {
    "det": f"{{class: {FAKE}, share: true, local_service_conf: {{max_batch_size: 8}}}}",
    "rec": f"{{class: {FAKE}, input_ops: [det], share: ocr_rec}}",
}


def test_shared_ops(tmp_path):
    ocr = pipe(tmp_path, "ocr", ops=SHARED_OPS)
    ocr_v2 = pipe(tmp_path, "ocr@2", "version: 2\n", ops=SHARED_OPS)
    ernie_ops = {
        "det": SHARED_OPS["det"],
        "recognise": f"{{class: {FAKE}, input_ops: [det], share: ocr_rec, params: {{threshold: 0.5}}}}",
        "ernie": f"{{class: {FAKE}, input_ops: [recognise]}}",
    }
    ocr_ernie = pipe(tmp_path, "ocr_ernie", ops=ernie_ops)
    repo = load_repository([ocr, ocr_v2, ocr_ernie])
    assert list(repo.shares) == ["det", "ocr_rec"]
    one, two, three = repo.pipelines
    assert repo.shares["det"].name == "det"
    assert repo.shares["det"].users == [(one, "det"), (two, "det"), (three, "det")]
    # a default written out (threshold 0.5) is the default left out
    assert repo.shares["ocr_rec"].users == [(one, "rec"), (two, "rec"), (three, "recognise")]
    assert op_fingerprint(one, "rec") == op_fingerprint(three, "recognise")


@pytest.mark.parametrize(
    "det, head, difference",
    [
        (
            f"{{class: {FAKE}, share: true, local_service_conf: {{max_batch_size: 16}}}}",
            "",
            "local_service_conf.max_batch_size is 16 here and 8",
        ),
        (
            f"{{class: {FAKE_MODEL}, share: true, local_service_conf: {{max_batch_size: 8, model_config: m}}}}",
            "",
            "class is 'tests.support.config_fakes:FakeModelOp' here and 'tests.support.config_fakes:FakeOp'",
        ),
        (
            f"{{class: {FAKE}, share: true, params: {{threshold: 0.9}}, local_service_conf: {{max_batch_size: 8}}}}",
            "",
            "params.threshold is 0.9 here and 0.5",
        ),
        (
            f"{{class: {FAKE}, share: true, timeout_ms: 100, local_service_conf: {{max_batch_size: 8}}}}",
            "",
            "timeout_ms is 100 here and null",
        ),
        (SHARED_OPS["det"], "dag: {channel_size: 4}\n", "dag.channel_size is 4 here and 64"),
        (SHARED_OPS["det"], "dag: {priority_levels: 2}\n", "dag.priority_levels is 2 here and 1"),
    ],
)
def test_a_share_needs_one_op_everywhere(tmp_path, det, head, difference):
    make_model(tmp_path / "m")
    a = pipe(tmp_path, "ocr", ops=SHARED_OPS)
    b = pipe(tmp_path, "other", head, ops={"det": det})
    expected = f"{b}: op.det.share: share 'det' needs one op everywhere, but {difference} in op 'det' of {a}"
    assert str(repo_error([a, b])) == expected


def test_a_share_name_once_per_pipeline(tmp_path):
    ops = {"a": f"{{class: {FAKE}, share: x}}", "b": f"{{class: {FAKE}, share: x, input_ops: [a]}}"}
    a = pipe(tmp_path, "ocr", ops=ops)
    message = f"{a}: op.b.share: share 'x' is already op 'a' of this pipeline (one op per pipeline)"
    assert str(repo_error([a])) == message


def test_every_problem_of_every_file_in_one_error(tmp_path):
    a = pipe(tmp_path, "ocr", "http_port: 1\n", ops=SHARED_OPS)
    b = pipe(tmp_path, "ocr@b", "http_port: 2\nrouting: {default: 7}\n", ops={"det": f"{{class: {FAKE}, share: det}}"})
    err = repo_error([a, b])
    assert str(err).splitlines() == [
        f"{b}: name: pipeline 'ocr' version 1 is already defined in {a}",
        f"{b}: http_port: 2 conflicts with 1 in {a} (one server listens on one port)",
        f"{b}: routing.default: version 7 of 'ocr' does not exist (versions: 1)",
        f"{b}: op.det.share: share 'det' needs one op everywhere, but local_service_conf.max_batch_size is 1 here "
        f"and 8 in op 'det' of {a}",
    ]
    assert list(err.by_source) == [b]


def test_errors_of_several_files_are_reported_together(tmp_path):
    a = pipe(tmp_path, "one", "http_port: 0\n")
    b = pipe(tmp_path, "two", ops={"a": f"{{class: {FAKE}, local_service_conf: {{max_batch: 1}}}}"})
    c = pipe(tmp_path, "three", "http_port: 5\n")  # valid alone; checks across files wait for a and b
    err = repo_error([a, b, c])
    assert str(err).splitlines() == [
        f"{a}: http_port: must be >= 1, got 0",
        f"{b}: op.a.local_service_conf.max_batch: unknown key (did you mean 'max_batch_size'?)",
    ]
    assert list(err.by_source) == [a, b]


# ---------------------------------------------------------------------------
# fingerprints
# ---------------------------------------------------------------------------
MODEL_OPS = {"det": f"{{class: {FAKE_MODEL}, local_service_conf: {{model_config: m, max_batch_size: 4}}}}"}


def test_pipeline_fingerprint_is_stable_across_reads(tmp_path):
    make_model(tmp_path / "m")
    path = pipe(tmp_path, "ocr", ops=MODEL_OPS)
    assert pipeline_fingerprint(load_config(path)) == pipeline_fingerprint(load_config(path))
    assert len(pipeline_fingerprint(load_config(path))) == 64


@pytest.mark.parametrize(
    "head, det",
    [
        ("version: 2\n", MODEL_OPS["det"]),
        ("dag: {request_timeout_ms: 5}\n", MODEL_OPS["det"]),
        ("max_inputs_per_request: 3\n", MODEL_OPS["det"]),
        ("", f"{{class: {FAKE_MODEL}, local_service_conf: {{model_config: m, max_batch_size: 8}}}}"),
        ("", f"{{class: {FAKE_MODEL}, local_service_conf: {{model_config: m2, max_batch_size: 4}}}}"),
        ("", f"{{class: {FAKE_MODEL}, share: true, local_service_conf: {{model_config: m, max_batch_size: 4}}}}"),
    ],
)
def test_pipeline_fingerprint_changes_with_what_serves(tmp_path, head, det):
    make_model(tmp_path / "m")
    make_model(tmp_path / "m2")
    before = pipeline_fingerprint(load_config(pipe(tmp_path, "ocr", ops=MODEL_OPS)))
    after = pipeline_fingerprint(load_config(pipe(tmp_path, "ocr", head, ops={"det": det})))
    assert before != after


def test_pipeline_fingerprint_sees_weights_replaced_in_place(tmp_path):
    model = make_model(tmp_path / "m")
    path = pipe(tmp_path, "ocr", ops=MODEL_OPS)
    before = pipeline_fingerprint(load_config(path))
    (model / "inference.pdiparams").write_bytes(b"new weights")
    assert pipeline_fingerprint(load_config(path)) != before


def test_pipeline_fingerprint_leaves_routing_to_the_route(tmp_path):
    before = pipeline_fingerprint(load_config(pipe(tmp_path, "ocr", "routing: {weights: {1: 1}}\n")))
    after = pipeline_fingerprint(load_config(pipe(tmp_path, "ocr", "routing: {key_header: X-User}\n")))
    assert before == after


def test_op_fingerprint_covers_the_op_and_the_queue_it_runs_on(tmp_path):
    base = load_config(pipe(tmp_path, "ocr", ops=SHARED_OPS))
    renamed = load_config(pipe(tmp_path, "other", "http_port: 1234\nversion: 4\n", ops=SHARED_OPS))
    assert op_fingerprint(base, "det") == op_fingerprint(renamed, "det")  # pipeline keys do not matter
    assert op_fingerprint(base, "det") != op_fingerprint(base, "rec")
    slower = load_config(pipe(tmp_path, "ocr", "dag: {priority_max_wait_ms: 5}\n", ops=SHARED_OPS))
    assert op_fingerprint(base, "det") != op_fingerprint(slower, "det")
    retried = {"det": SHARED_OPS["det"].replace("share: true", "share: true, retry: 3"), "rec": SHARED_OPS["rec"]}
    assert op_fingerprint(base, "det") != op_fingerprint(load_config(pipe(tmp_path, "ocr", ops=retried)), "det")
