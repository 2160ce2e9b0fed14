"""Working sets on fake sysfs trees for the machines users have: a VM that reports its host's huge L3 to two vCPUs,
no L3 at all, one core, cores with SMT siblings, and a big server where the cores in use are a few of many."""

from __future__ import annotations

from pathlib import Path

from archline.bench.cpu_asm import topology as topo

KIB, MIB, GIB = 1024, 1024**2, 1024**3


def _tree(root: Path, cpus: dict[int, int], caches: list[tuple[int, str, int, dict[int, str]]]) -> Path:
    """cpus: logical cpu -> core id; caches: (level, type, size, {cpu: shared_cpu_list}) per cache index."""
    for cpu, core in cpus.items():
        t = root / f"cpu{cpu}" / "topology"
        t.mkdir(parents=True)
        (t / "physical_package_id").write_text("0\n")
        (t / "core_id").write_text(f"{core}\n")
        for i, (level, kind, size, shared) in enumerate(caches):
            d = root / f"cpu{cpu}" / "cache" / f"index{i}"
            d.mkdir(parents=True)
            (d / "level").write_text(f"{level}\n")
            (d / "type").write_text(f"{kind}\n")
            (d / "size").write_text(f"{size // KIB}K\n")
            (d / "shared_cpu_list").write_text(f"{shared[cpu]}\n")
    return root


def _private(cpus: list[int]) -> dict[int, str]:
    return {c: str(c) for c in cpus}


def test_vm_reporting_the_hosts_huge_l3(tmp_path: Path) -> None:
    # the 2-vCPU Xeon VM: L1d 48 KiB and L2 2 MiB per core, one L3 of 480 MiB "shared" by both vCPUs
    root = _tree(tmp_path, {0: 0, 1: 1}, [(1, "Data", 48 * KIB, _private([0, 1])),
                                          (2, "Unified", 2 * MIB, _private([0, 1])),
                                          (3, "Unified", 480 * MIB, {0: "0-1", 1: "0-1"})])
    ws, notes = topo.working_set_plan(2, root=root, allowed=[0, 1])
    assert ws["l1"] == 48 * KIB and ws["l2"] == 2 * MIB
    assert ws["l3"] == 16 * MIB                       # 4x the L2s, inside the 128 MiB believed
    assert ws["mem"] == GIB                           # 8 x 128 MiB, not 8 x 480 MiB = 3.75 GiB
    assert len(notes) == 1 and "implausible" in notes[0] and "480 MiB" in notes[0]
    quick, _ = topo.working_set_plan(2, quick=True, root=root, allowed=[0, 1])
    assert quick["mem"] == GIB


def test_no_l3(tmp_path: Path) -> None:
    root = _tree(tmp_path, {0: 0, 1: 1}, [(1, "Data", 32 * KIB, _private([0, 1])),
                                          (2, "Unified", 512 * KIB, _private([0, 1]))])
    ws, notes = topo.working_set_plan(2, root=root, allowed=[0, 1])
    assert set(ws) == {"l1", "l2", "mem"} and ws["mem"] == GIB
    assert any("no L3" in n for n in notes)


def test_one_core(tmp_path: Path) -> None:
    root = _tree(tmp_path, {0: 0}, [(1, "Data", 32 * KIB, {0: "0"}), (2, "Unified", 1 * MIB, {0: "0"}),
                                    (3, "Unified", 32 * MIB, {0: "0"})])
    ws, notes = topo.working_set_plan(4, root=root, allowed=[0])   # asks for 4 threads, has 1 core
    assert ws == {"l1": 16 * KIB, "l2": 512 * KIB, "l3": 4 * MIB, "mem": GIB}
    assert notes == []


def test_smt_siblings_share_their_core(tmp_path: Path) -> None:
    # 2 cores x 2 threads: cpu0/cpu2 on core 0, cpu1/cpu3 on core 1; L1/L2 shared by siblings, L3 by all four
    cpus = {0: 0, 1: 1, 2: 0, 3: 1}
    sib = {0: "0,2", 2: "0,2", 1: "1,3", 3: "1,3"}
    root = _tree(tmp_path, cpus, [(1, "Data", 48 * KIB, sib), (2, "Unified", 2 * MIB, sib),
                                  (3, "Unified", 30 * MIB, dict.fromkeys(cpus, "0-3"))])
    assert topo.one_cpu_per_core(root, [0, 1, 2, 3]) == [0, 1]
    ws, notes = topo.working_set_plan(2, root=root, allowed=[0, 1, 2, 3])
    # one thread per core has its core's whole L1/L2 (the sibling is idle): half of 2 x each
    assert ws["l1"] == 48 * KIB and ws["l2"] == 2 * MIB
    assert ws["l3"] == 15 * MIB                       # half of the 30 MiB L3 the two cores own
    assert notes == []
    one, _ = topo.working_set_plan(1, root=root, allowed=[0, 1, 2, 3])
    # 1 core: 4x its 2 MiB L2 would be 8 MiB, but its share of the L3 is 15 MiB, half of it 7.5 MiB
    assert one["l1"] == 24 * KIB and one["l3"] == 15 * MIB // 2


def test_big_server_few_cores_in_use(tmp_path: Path) -> None:
    # 64 cores sharing a 256 MiB L3; a chase on one core: share 4 MiB, but the L3 level must lie past its 2 MiB L2
    cpus = {c: c for c in range(64)}
    root = _tree(tmp_path, cpus, [(1, "Data", 48 * KIB, _private(list(cpus))),
                                  (2, "Unified", 2 * MIB, _private(list(cpus))),
                                  (3, "Unified", 256 * MIB, dict.fromkeys(cpus, "0-63"))])
    one, notes = topo.working_set_plan(1, root=root, allowed=list(cpus))
    assert one["l2"] == MIB and one["l3"] == 4 * MIB and one["l3"] > 2 * MIB
    assert one["mem"] == 2 * GIB                      # 8 x the L3 one core may fill while the others idle
    assert notes == []
    quick, _ = topo.working_set_plan(1, quick=True, root=root, allowed=list(cpus))
    assert quick["mem"] == topo.MEM_QUICK_MAX_BYTES
    # all 64 cores: their L2s hold 128 MiB, as much as half the L3 holds: no working set lives in L3 alone
    full, notes = topo.working_set_plan(64, root=root, allowed=list(cpus))
    assert "l3" not in full and any("too small" in n for n in notes)


def test_this_machine_plan_is_consistent() -> None:
    ws, _notes = topo.working_set_plan(len(topo.one_cpu_per_core()))
    assert ws["l1"] < ws["l2"] < ws.get("l3", ws["l2"] + 1) < ws["mem"]
    assert ws["mem"] >= topo.MEM_MIN_BYTES


def test_roofline_working_sets_stay_inside_each_level_and_the_cap(tmp_path: Path) -> None:
    """The quick roofline's cache points on the VM that reports 480 MiB of L3: every L3 size between twice the
    L2s and the 16 MiB the capped plan allows, never from the reported 480 MiB; L1 and L2 at 1/4..1/2 share."""
    root = _tree(tmp_path, {0: 0, 1: 1}, [(1, "Data", 48 * KIB, _private([0, 1])),
                                          (2, "Unified", 2 * MIB, _private([0, 1])),
                                          (3, "Unified", 480 * MIB, {0: "0-1", 1: "0-1"})])
    ws, notes = topo.roofline_working_sets(2, root=root, allowed=[0, 1])
    assert ws["l1"] == [24 * KIB, 36 * KIB, 48 * KIB]
    assert ws["l2"] == [MIB, 3 * MIB // 2, 2 * MIB]
    assert ws["l3"][0] == 8 * MIB and ws["l3"][-1] == 16 * MIB and len(ws["l3"]) == 3
    assert any("implausible" in n for n in notes)


def test_roofline_working_sets_without_an_l3_level(tmp_path: Path) -> None:
    # 8 cores whose L2s (16 MiB) hold as much as their shared 16 MiB L3: no working set lives in L3 alone
    cpus = {c: c for c in range(8)}
    root = _tree(tmp_path, cpus, [(1, "Data", 48 * KIB, _private(list(cpus))),
                                  (2, "Unified", 2 * MIB, _private(list(cpus))),
                                  (3, "Unified", 16 * MIB, dict.fromkeys(cpus, "0-7"))])
    ws, notes = topo.roofline_working_sets(8, root=root, allowed=list(cpus))
    assert set(ws) == {"l1", "l2"} and any("too small" in n for n in notes)
