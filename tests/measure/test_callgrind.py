"""Reading callgrind dumps and the per-iteration arithmetic (no valgrind needed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from neuronasv.measure.callgrind import (
    EXCLUDED_FUNCTIONS,
    Dump,
    parse_dump,
    read_dumps,
    read_functions,
    valgrind_status,
)

DUMP = """# callgrind format
version: 1
creator: callgrind-3.19.0
desc: Trigger: Client Request: rmsnorm.naive|4x512|float32|total|a

positions: line
events: Ir
summary: 1000

ob=(1) /usr/lib/x86_64-linux-gnu/libc.so.6
fl=(1) ???
fn=(1) _int_malloc
0 100
fn=(2) __memcmp_avx2_movbe
0 7
ob=(2) /root/.pyenv/versions/3.11.7/lib/libpython3.11.so.1.0
fn=(3) _PyEval_EvalFrameDefault
0 200
cob=(3) /venv/lib/python3.11/site-packages/torch/lib/libtorch_cpu.so
cfn=(4) at::native::mul
calls=1 0
0 650
ob=(3)
fn=(4)
0 600
fn=(5) _int_free'2
0 43
ob=(1)
fn=(1)
0 50

totals: 1000
"""


def test_parse_dump_takes_label_total_and_the_excluded_and_harness_shares() -> None:
    d = parse_dump(DUMP)
    assert d == Dump("rmsnorm.naive|4x512|float32|total|a", 1000, 100 + 7 + 43 + 50, 200)
    # the call's inclusive cost line (650) is not a self cost; compressed names resolve
    assert d.instructions == 800 and d.native == 600


def test_parse_dump_ignores_the_exit_dump() -> None:
    text = DUMP.replace(
        "Client Request: rmsnorm.naive|4x512|float32|total|a", "Program termination"
    )
    assert parse_dump(text) is None
    assert parse_dump("") is None


@pytest.mark.parametrize(
    ("name", "excluded"),
    [
        ("_int_malloc", True),
        ("malloc_consolidate", True),
        ("unlink_chunk.constprop.0", True),
        ("__memmove_avx_unaligned_erms", True),
        ("memcpy@GLIBC_2.14", True),
        ("_Py_Specialize_Call", True),
        ("at::native::mul_kernel", False),
        ("_PyEval_EvalFrameDefault", False),
        ("strlen'2", True),
        # pybind11's table of live wrappers, keyed by address
        ("std::_Hashtable<void const*, std::pair<void const* const, pybind11::detail::instance*>,"
         " std::allocator<std::pair<void const* const, pybind11::detail::instance*> > >::"
         "_M_insert_multi_node(std::__detail::_Hash_node<std::pair<void const* const,"
         " pybind11::detail::instance*>, false>*, unsigned long)", True),
        # the autograd engine's tables keyed by node addresses, and its walk over them
        ("std::_Hashtable<torch::autograd::Node*, torch::autograd::Node*>::_M_rehash", True),
        ("torch::autograd::Engine::compute_dependencies(torch::autograd::Node*,"
         " torch::autograd::GraphTask&, unsigned long)", True),
        ("std::__detail::_Map_base<torch::autograd::Node*, std::pair<torch::autograd::Node*"
         " const, torch::autograd::GraphTask::ExecInfo> >::operator[](torch::autograd::Node*"
         " const&)", True),
        ("torch::autograd::Node::task_should_compute_output(unsigned long) const", True),
        ("torch::autograd::Engine::execute(std::vector<torch::autograd::Edge> const&)", False),
        ("std::vector<torch::autograd::Node*>::push_back(torch::autograd::Node* const&)", False),
        ("torch::autograd::Node::operator()(std::vector<at::Tensor>&&)", False),
        # the unwinder's lookup of an address among the loaded objects (their mapping)
        ("_dl_find_object", True),
        ("_Unwind_Find_FDE", False),
        # pybind11's table of registered types, keyed by the Python type object's address
        ("pybind11::detail::all_type_info_get_cache(_typeobject*)", True),
        ("pybind11::detail::type_caster_generic::load_impl<pybind11::detail::type_caster_generic>"
         "(pybind11::handle, bool)", False),
    ],
)
def test_excluded_functions(name: str, excluded: bool) -> None:
    assert bool(EXCLUDED_FUNCTIONS.match(name)) is excluded


def test_read_dumps_reads_labelled_dumps_and_removes_them(tmp_path: Path) -> None:
    (tmp_path / "cg.out.1234.1").write_text(DUMP)
    (tmp_path / "cg.out.1234").write_text("")  # a process's exit dump: no label, removed too
    (tmp_path / "other").write_text(DUMP)
    found = read_dumps(str(tmp_path), "cg.out")
    assert list(found) == ["rmsnorm.naive|4x512|float32|total|a"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other"]


def test_read_dumps_keeps_the_files_to_read_them_again_function_by_function(
    tmp_path: Path,
) -> None:
    (tmp_path / "cg.out.1").write_text(DUMP)
    (dump,) = read_dumps(str(tmp_path), "cg.out", remove=False).values()
    assert dump.path == str(tmp_path / "cg.out.1") and dump.functions is None
    torch_cpu = "/venv/lib/python3.11/site-packages/torch/lib/libtorch_cpu.so"
    # only what is counted: neither the allocators nor the interpreter
    assert read_functions(dump) == {(torch_cpu, "at::native::mul"): 600}
    (tmp_path / "cg.out.1").unlink()
    assert read_functions(dump) == {}


#: libpython's calls to its own functions go through ``.plt.sec`` stubs that valgrind
#: names no object for; a run-time generated kernel (oneDNN's) has no object either.
STUBS = """# callgrind format
desc: Trigger: Client Request: w|4x4|float32|pair|a|0
positions: line
events: Ir
summary: 1000
ob=(1) ???
fn=(1) 0x0000000004936788
0 40
cob=(2) /root/.pyenv/versions/3.11.7/lib/libpython3.11.so.1.0
cfn=(2) PyObject_GetAttr
calls=40 0
0 300
fn=(3) 0x000000002deca000
0 500
ob=(2)
fn=(2)
0 300
ob=(3) /venv/lib/python3.11/site-packages/torch/lib/libtorch_cpu.so
fn=(4) at::native::conv
0 160
cob=(1)
cfn=(3)
calls=1 0
0 500
totals: 1000
"""


def test_a_stub_of_no_object_into_the_interpreter_is_harness_generated_code_counts() -> None:
    d = parse_dump(STUBS, functions=True)
    assert d is not None and d.harness == 300 + 40 and d.native == 500 + 160
    assert d.functions == {
        ("/venv/lib/python3.11/site-packages/torch/lib/libtorch_cpu.so", "at::native::conv"): 160,
        ("???", "0x000000002deca000"): 500,
    }


def test_valgrind_status_says_how_to_get_it_when_absent() -> None:
    usable, line = valgrind_status("no-such-valgrind-here")
    assert not usable and "apt-get install valgrind" in line
