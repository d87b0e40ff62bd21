#!/usr/bin/env python3
"""Checks the cluster launch files headroom writes against the engines' own config definitions.

DeepSpeed's and accelerate's config loaders import torch at module load, and PyPI's Linux torch is
the CUDA build (several GB with its nvidia-* wheels), so this reads the engines' published source
instead of importing it: the packages are fetched from PyPI (`pip download --no-deps`, see
.ci/run) and their config classes are read with Python's `ast`:

- DeepSpeed: every key of `zero_optimization` must be a field or alias of
  `DeepSpeedZeroConfig` (deepspeed/runtime/zero/config.py; the model is `extra="forbid"`, so
  DeepSpeed itself rejects any other key), with a value of the field's type; `bf16` keys must be
  fields of `DeepSpeedBF16Config` (deepspeed/runtime/precision_config.py); every top-level key
  must be one DeepSpeed reads (a string constant of deepspeed/runtime/constants.py or, for
  `zero_optimization`, of runtime/zero/config.py), and
  `train_batch_size` = micro-batch × accumulation × data-parallel ranks, DeepSpeed's
  `_batch_assertion` (deepspeed/runtime/config.py).
- accelerate: every top-level key of the YAML must be a field of `ClusterConfig` or `BaseConfig`
  (accelerate/commands/config/config_args.py: `ClusterConfig(**config_dict)` fails on any other
  key); every `fsdp_config` key must be a `--fsdp_*` option of `accelerate launch`
  (accelerate/commands/launch.py, which copies `fsdp_config.x` onto `args.fsdp_x` and silently
  drops unknown ones), and the strategy, wrap policy, prefetch and state-dict values must be in
  accelerate/utils/constants.py's lists.

Usage: check_launch_files.py HEADROOM DEEPSPEED_SRC_DIR ACCELERATE_SRC_DIR
"""

import ast
import json
import os
import re
import subprocess
import sys

HEADROOM, DS, ACC = sys.argv[1:4]


def tree(path):
    with open(path, encoding="utf-8") as f:
        return ast.parse(f.read(), path)


def class_fields(path, name):
    """{field or alias: annotation text} of class `name` in `path`."""
    for node in ast.walk(tree(path)):
        if isinstance(node, ast.ClassDef) and node.name == name:
            out = {}
            for st in node.body:
                if isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name):
                    ann = ast.unparse(st.annotation)
                    out[st.target.id] = ann
                    v = st.value
                    if isinstance(v, ast.Call) and ast.unparse(v.func) == "Field":
                        for kw in v.keywords:
                            if kw.arg == "alias" and isinstance(kw.value, ast.Constant):
                                out[kw.value.value] = ann
            return out
    raise SystemExit(f"{path}: no class {name}")


def string_constants(path):
    out = set()
    for node in ast.walk(tree(path)):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
            if isinstance(node.value.value, str):
                out.add(node.value.value)
    return out


def list_constant(path, name):
    for node in ast.walk(tree(path)):
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == name for t in node.targets
        ):
            return ast.literal_eval(node.value)
    raise SystemExit(f"{path}: no constant {name}")


def launch_options(path):
    out = set()
    for node in ast.walk(tree(path)):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "add_argument":
            for a in node.args:
                if isinstance(a, ast.Constant) and isinstance(a.value, str) and a.value.startswith("--"):
                    out.add(a.value[2:].replace("-", "_"))
    return out


def type_ok(ann, value):
    if "bool" in ann and "int" not in ann:
        return isinstance(value, bool)
    if ann in ("int", "ZeroStageEnum"):
        return isinstance(value, int) and not isinstance(value, bool)
    return True  # nested models, enums and unions: checked by key only


ZERO = class_fields(f"{DS}/deepspeed/runtime/zero/config.py", "DeepSpeedZeroConfig")
BF16 = class_fields(f"{DS}/deepspeed/runtime/precision_config.py", "DeepSpeedBF16Config")
OFFLOAD_OPT = class_fields(
    f"{DS}/deepspeed/runtime/zero/offload_config.py", "DeepSpeedZeroOffloadOptimizerConfig"
)
OFFLOAD_PARAM = class_fields(
    f"{DS}/deepspeed/runtime/zero/offload_config.py", "DeepSpeedZeroOffloadParamConfig"
)
DS_KEYS = string_constants(f"{DS}/deepspeed/runtime/constants.py") | string_constants(
    f"{DS}/deepspeed/runtime/zero/config.py"
)
CFG = f"{ACC}/accelerate/commands/config/config_args.py"
ACC_FIELDS = {**class_fields(CFG, "BaseConfig"), **class_fields(CFG, "ClusterConfig")}
LAUNCH = launch_options(f"{ACC}/accelerate/commands/launch.py")
CONSTS = f"{ACC}/accelerate/utils/constants.py"
CHOICES = {
    "fsdp_sharding_strategy": list_constant(CONSTS, "FSDP_SHARDING_STRATEGY"),
    "fsdp_auto_wrap_policy": list_constant(CONSTS, "FSDP_AUTO_WRAP_POLICY"),
    "fsdp_backward_prefetch": list_constant(CONSTS, "FSDP_BACKWARD_PREFETCH"),
    "fsdp_state_dict_type": list_constant(CONSTS, "FSDP_STATE_DICT_TYPE"),
}


def section(text, title):
    """The block after the line `title:` up to the first blank line."""
    lines = text.splitlines()
    i = lines.index(title + ":")
    body = []
    for line in lines[i + 1 :]:
        if not line.strip():
            break
        body.append(line)
    return "\n".join(body)


def check_model(cfg, fields, where, errors):
    for k, v in cfg.items():
        if k not in fields:
            errors.append(f"{where}.{k}: not a field of DeepSpeed's config class")
        elif not type_ok(fields[k], v):
            errors.append(f"{where}.{k} = {v!r}: DeepSpeed declares {fields[k]}")


def check_deepspeed(text, errors):
    cfg = json.loads(section(text, "DeepSpeed config (ds_config.json)"))
    for k in cfg:
        if k not in DS_KEYS:
            errors.append(f"ds_config.{k}: not a key DeepSpeed reads (runtime/constants.py)")
    check_model(cfg.get("bf16", {}), BF16, "bf16", errors)
    z = cfg.get("zero_optimization", {})
    check_model(
        {k: v for k, v in z.items() if not k.startswith("offload_")}, ZERO, "zero_optimization", errors
    )
    check_model(z.get("offload_optimizer", {}), OFFLOAD_OPT, "offload_optimizer", errors)
    check_model(z.get("offload_param", {}), OFFLOAD_PARAM, "offload_param", errors)
    if not 0 <= z.get("stage", 0) <= 3:
        errors.append(f"zero_optimization.stage = {z.get('stage')}")
    m = re.search(r"× (\d+) micro-batches × (\d+) data-parallel ranks", text)
    if m:
        want = cfg["train_micro_batch_size_per_gpu"] * cfg["gradient_accumulation_steps"] * int(m.group(2))
        if cfg["train_batch_size"] != want:
            errors.append(f"train_batch_size {cfg['train_batch_size']} != micro × accumulation × dp = {want}")
    else:
        errors.append("the ds_config note names no micro-batches × data-parallel ranks")
    return cfg


def yaml_dict(text):
    """The two-level YAML headroom writes: `key: value` and one nested `fsdp_config:` block."""
    out, cur = {}, None
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        key, _, val = line.strip().partition(":")
        val = val.strip()
        parsed = {"true": True, "false": False}.get(val, val)
        if isinstance(parsed, str) and re.fullmatch(r"-?\d+", parsed):
            parsed = int(parsed)
        if line.startswith(" ") and cur is not None:
            cur[key] = parsed
        elif val == "":
            cur = out[key] = {}
        else:
            cur = None
            out[key] = parsed
    return out


def check_accelerate(text, errors):
    cfg = yaml_dict(section(text, "accelerate config (fsdp.yaml)"))
    for k in cfg:
        if k not in ACC_FIELDS:
            errors.append(f"fsdp.yaml {k}: not a field of accelerate's ClusterConfig")
    for k, v in cfg.get("fsdp_config", {}).items():
        key = k if k.startswith("fsdp") else "fsdp_" + k
        if key not in LAUNCH:
            errors.append(f"fsdp_config.{k}: accelerate launch has no --{key} (ignored silently)")
        if key in CHOICES and v not in CHOICES[key]:
            errors.append(f"fsdp_config.{k} = {v}: not one of {CHOICES[key]}")
    if cfg.get("distributed_type") != "FSDP":
        errors.append(f"distributed_type {cfg.get('distributed_type')}")
    if cfg.get("num_processes") != cfg.get("num_machines", 0) * 8:
        errors.append(f"num_processes {cfg.get('num_processes')} != 8 × num_machines")
    return cfg


CASES = [
    ("ZeRO-3", ["--model", "llama-3-70b", "--framework", "deepspeed", "--sharding", "zero3", "--nodes", "4"], check_deepspeed),
    ("ZeRO-2", ["--model", "llama-3-8b", "--framework", "deepspeed", "--sharding", "zero2", "--nodes", "2"], check_deepspeed),
    ("ZeRO-1", ["--model", "llama-3-8b", "--framework", "deepspeed", "--sharding", "zero1", "--nodes", "2"], check_deepspeed),
    ("ZeRO-3 + offload", ["--model", "llama-3-70b", "--framework", "deepspeed", "--sharding", "zero3", "--offload", "optimizer", "--nodes", "2"], check_deepspeed),
    ("FSDP", ["--model", "llama-3-70b", "--framework", "fsdp", "--sharding", "fsdp", "--nodes", "4"], check_accelerate),
    ("HSDP", ["--model", "llama-3-8b", "--framework", "fsdp", "--sharding", "hsdp", "--nodes", "2"], check_accelerate),
]


def self_test():
    """The checks reject what DeepSpeed and accelerate would: a misspelt key, a wrong type, a
    batch that does not multiply out, an unknown FSDP option and value."""
    bad_ds = (
        "DeepSpeed config (ds_config.json):\n"
        + json.dumps(
            {
                "train_batch_size": 100,
                "train_micro_batch_size_per_gpu": 1,
                "gradient_accumulation_steps": 2,
                "zero_optimisation": {},
                "zero_optimization": {"stage": 3, "overlap_comm": "yes", "stage3_prefetch_bucket": 1},
            },
            indent=2,
        )
        + "\n\nZeRO-3 × 2 micro-batches × 8 data-parallel ranks = 16 sequences per step.\n"
    )
    errors = []
    check_deepspeed(bad_ds, errors)
    want = ["zero_optimisation", "overlap_comm", "stage3_prefetch_bucket", "train_batch_size 100"]
    missed = [w for w in want if not any(w in e for e in errors)]
    bad_yaml = (
        "accelerate config (fsdp.yaml):\ndistributed_type: FSDP\nnum_machines: 1\nnum_processes: 8\n"
        "num_gpus: 8\nfsdp_config:\n  fsdp_sharding_strategy: FULL\n  fsdp_offload_everything: true\n"
    )
    errors2 = []
    check_accelerate(bad_yaml, errors2)
    want2 = ["num_gpus", "FULL", "fsdp_offload_everything"]
    missed += [w for w in want2 if not any(w in e for e in errors2)]
    if missed:
        raise SystemExit(f"self-test: the checks missed {missed}: {errors + errors2}")
    print(f"self-test: {len(errors) + len(errors2)} planted defects found")


def main():
    self_test()
    failed = 0
    for name, args, check in CASES:
        cmd = [HEADROOM, "cluster", "--mode", "full", "--machine", "aws-p5-48xlarge", "--tp", "1", "--pp", "1", "--launch", *args]
        out = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "NO_COLOR": "1"})
        errors = []
        if out.returncode != 0:
            errors.append(f"exit {out.returncode}: {out.stderr.strip()}")
            cfg = None
        else:
            try:
                cfg = check(out.stdout, errors)
            except (ValueError, KeyError) as e:
                errors.append(f"no launch file of the expected kind: {e}")
                cfg = None
        status = "ok" if not errors else "FAILED"
        print(f"{name:<18} {status}: {' '.join(args)}")
        if cfg is not None:
            print("    keys:", ", ".join(sorted(cfg)))
            for nested in ("zero_optimization", "fsdp_config"):
                if isinstance(cfg.get(nested), dict):
                    print(f"    {nested}:", ", ".join(f"{k}={v}" for k, v in sorted(cfg[nested].items())))
        for e in errors:
            print("    " + e)
        failed += bool(errors)
    print(f"DeepSpeed {len(ZERO)} ZeRO fields, accelerate {len(ACC_FIELDS)} config fields and {len(LAUNCH)} launch options read from the packages' source")
    sys.exit(1 if failed else 0)


main()
