"""The default run's longest tests, moved to the slow set to keep `.ci/run` under 15 minutes (CI took 914 s with them).

Each took 4.9 s or more in a full default run on a 2-vCPU Zen 3 (pytest --durations, November 2026). They still
run with ``-m slow``. The S0 Table IV recovery through ``archline fit`` and the calibrated-rows label stay in the
default run. ``tests/conftest.py`` marks these node ids; ``tests/package/test_slow_list.py`` keeps the list honest.
"""

SLOW_NODE_IDS: frozenset[str] = frozenset({
    'tests/bench_cpu/test_cpu_asm_code.py::test_horner_loop_is_g_register_fmas[avx2]',
    'tests/bench_cpu/test_cpu_failed_points.py::test_bench_run_with_a_failed_checksum_exits_3_and_keeps_the_row',
    'tests/fit/test_results_owner.py::test_stdin_and_process_substitution_in_a_real_shell',
    'tests/gpu_kernels/test_ceiling_kernels.py::test_cuda_builds_with_the_declared_work',
    'tests/gpu_kernels/test_hip_fake.py::test_run_path[hip:intensity/sp/mem[fma_per_elem=2,working_set_bytes=1048576]]',
    'tests/lab/test_lab_local.py::test_lab_local_scheduler_submit_status_collect',
    'tests/lab/test_lab_signals.py::test_lab_local_submit_stopped_stops_its_task[Ctrl-C]',
    'tests/lab/test_lab_signals.py::test_lab_local_submit_stopped_stops_its_task[SIGTERM]',
    'tests/lab/test_lab_slurm.py::test_lab_slurm_two_platforms_submit_collect_fit_compare',
    'tests/package/test_bad_inputs.py::test_baselines_are_valid',
    'tests/package/test_console_output.py::test_a_dangling_link_output_makes_no_directories_for_its_target',
    'tests/package/test_console_output.py::test_a_full_stderr_keeps_exit_0_and_every_output',
    'tests/package/test_output_policy.py::test_fit_refuses_its_input_as_output_and_leaves_it_alone',
    'tests/package/test_situations.py::test_a_signal_at_a_random_point[bench run-SIGINT]',
    'tests/package/test_situations.py::test_process_substitution_gives_the_plain_file_result',
    'tests/package/test_situations.py::test_sigkill_then_rerun_of_a_sweep',
    'tests/package/test_situations.py::test_situations[codesign]',
    'tests/package/test_situations.py::test_situations[fit]',
    'tests/package/test_situations.py::test_situations[ipp validate]',
    'tests/package/test_situations.py::test_situations[iso-power]',
    'tests/package/test_situations.py::test_situations[plot]',
    'tests/package/test_situations.py::test_situations[throttle]',
    'tests/powermon/test_bmc_breaker24.py::test_ipmi_login_sha1_fallback_wrong_password_and_nothing_listening',
    'tests/powermon/test_decode_prefix.py::test_prefix_fed_in_chunks[1]',
    'tests/powermon/test_faults_cli.py::test_meter_record_reports_every_fault[stall=0:30]',
    'tests/powermon/test_meter_situations.py::test_odd_file_names[newline]',
    'tests/powermon/test_meter_situations.py::test_odd_file_names[not-utf8]',
    'tests/powermon/test_meter_situations.py::test_sigterm_during_a_recording',
    'tests/runner/test_runner_emulated_e2e.py::test_runner_bench_run_cli_emulate_and_errors',
    'tests/runner/test_runner_emulated_e2e.py::test_runner_emulated_power_cap_follows_capped_model',
    'tests/runner/test_runner_emulated_e2e.py::test_runner_emulated_user_profile_fit_recovers_its_values',
    'tests/runner/test_runner_lost_samples.py::test_a_lossy_point_fails_and_the_resumed_sweep_retries_it',
    'tests/runner/test_runner_options.py::test_rows_on_every_path[metered]',
    'tests/runner/test_runner_safe_names.py::test_profile_name_with_path_parts_stays_inside_out',
    'tests/runner/test_runner_sweep.py::test_runner_second_sweep_exits_at_once_saying_locked',
    'tests/use/test_measure.py::test_burst_shorter_than_a_sample_period_is_within_its_bound',
    'tests/use/test_measure_placement.py::test_placement_of_an_emulated_program_agrees_with_the_model',
    'tests/use/test_use_design_space.py::test_use_design_cli',
})
