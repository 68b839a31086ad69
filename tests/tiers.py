"""Which tests scripts/test.sh runs alone (`serial`) or leaves out of its fast tier (`live`,
`heavy`) where no fixture says so; tests/conftest.py marks them at collection. Entries are node id
prefixes: a file, or file::test (every parametrisation of it)."""

from __future__ import annotations

# Tests that measure real time (rates, latencies, time-outs bounded from above): scripts/test.sh
# runs them after the parallel phase, two at a time (they wait, using little CPU), so that the
# CPU-heavy tests of that phase do not decide them on a 2-core machine.
SERIAL: tuple[str, ...] = (
    # usercmd and snapshot rates of a live Quake 3 session (60 Hz / 20 Hz within 10-20 %)
    "tests/q3/test_live_session.py::test_stream_60hz_usercmds_then_disconnect",
    "tests/q3/test_pump_live.py",  # assert_streams: the same rates after restarts, map changes
    "tests/q3/test_transport_wait.py",  # wakes per tick, 60 Hz kept
    "tests/q3/test_pump.py::test_an_interrupt_just_before_run_stops_it_and_is_consumed",  # within 1 s
    "tests/q3/test_pump.py::test_interrupt_from_another_thread_stops_run_at_its_next_wake",
    # joins bounded at 1-6 s, a reconnect window of 1.5 s
    "tests/q3/test_handshake_live.py::test_each_family_is_joined_from_the_servers_answers",
    "tests/q3/test_handshake_live.py::test_a_server_silent_after_connect_response_gets_the_other_family_once_its_"
    "reconnect_limit_passed",
    "tests/q3/test_handshake_live.py::test_a_forced_family_the_server_does_not_speak_ends_at_once_with_what_it_speaks",
    "tests/q3/test_handshake_live.py::test_a_password_server_refuses_without_it_and_lets_in_with_it",
    "tests/q3/test_handshake_live.py::test_a_dozen_clients_starting_together_from_one_address_all_join",
    # NetSync send rates seen by the official client (4.0-5.5 Hz moving, 0.6-1.3 Hz still), joins < 5 s
    "tests/netsync/test_protocols_live.py::test_the_official_client_sees_our_send_policy",
    "tests/netsync/test_protocols_live.py::test_join_names_the_servers_protocol_when_ours_is_wrong",
    # the swarm's relay rates against the servers' logs (p50 19-20.5 Hz), Locust's broadcast rates
    "tests/swarm/test_live.py",
    "tests/swarm/test_locust.py::test_master_and_two_workers_against_netsync",
    "tests/swarm/test_loop.py::test_should_stop_ends_the_run_within_a_wakeup",
    "tests/swarm/test_refusals.py::test_nothing_listening_exits_3_at_once_naming_the_address",
    # a run stops within 3-5 s of a signal; a sink streams at > 30 Hz; joins within the still lead-in
    "tests/app/test_stop.py::test_a_second_signal_exits_at_once_even_with_the_main_thread_blocked",
    "tests/app/test_stop_live.py",
    "tests/app/test_sinks_alone.py",
    "tests/app/test_e2e.py",
    # the runtime's frame rate achieved within 10 %; Monado's 20/90 Hz within 5 %
    "tests/xrsession/test_runtime_extensions.py",
    # the headless loop's own 90 Hz pacing within 10 %, frames located within 50 ms of the clock
    "tests/xrsession/test_headless.py::test_headless_loop_paces_itself_and_poses_follow_the_clock",
    "tests/xrsession/test_headless.py::test_without_a_time_conversion_frames_are_located_by_the_event_clock",
    "tests/monado/test_monado25.py",
)

# Tests that change a file other tests read, or whose real-time floors need the machine to
# themselves (serial as well, and run in a phase of their own, one at a time, with nothing beside them).
ALONE: tuple[str, ...] = (
    # 133 players (32 Q3 at 60 Hz, 100 NetSync) on one loop beside ioq3ded and styly-netsync-server
    # (11 s of CPU in 22 s, servers included), rates floored (60 Hz usercmds, 20 / 10 Hz relays).
    # Beside other work (load 3-6 on 2 cores) the floors fell: 9,467 usercmds (floor 13,824),
    # ioq3ded's snapshots 18.2/s, styly's broadcasts 8.8/s; given the CPU first (nice -10, same
    # load) they held. The report's own rule cannot sort ours out: the loop flags a slipped tick
    # (> 5 ms late) in every second of this run, with priority too (20-36 % of its Q3 ticks).
    "tests/swarm/test_live.py::test_32_q3_and_100_netsync_players_match_the_servers_logs",
    # ages the built xr/_fastframe*.so for a moment: beside it, fastframe.build() rebuilds it and
    # fastframe.load() refuses it (a test of the native path would run on ctypes)
    "tests/app/test_cli.py::test_doctor_says_when_a_native_helper_is_switched_off_or_missing",
)

# Tests that start a live server, Xvfb or a runtime in their body (the fast tier's guard names
# those that start a server; see tests/conftest.py).
LIVE: tuple[str, ...] = ("tests/swarm/test_refusals.py::test_a_full_server_counts_the_players_that_never_got_in",)

# Tests of more than about a second (hypothesis runs of hundreds of examples, fuzz loops, builds)
# or that start `headcast`, pytest or another interpreter: out of the fast tier, in the full run.
HEAVY: tuple[str, ...] = (
    "tests/app/test_bad_files.py",
    "tests/app/test_cli.py",
    "tests/app/test_cli_help.py",
    "tests/app/test_doctor_session.py",
    "tests/app/test_not_a_trace.py",
    "tests/app/test_output.py",
    "tests/app/test_recording_ended_early.py",
    "tests/netsync/test_codec_fastpath.py",
    "tests/swarm/test_locust.py",
    "tests/xrsession/test_gl_and_validation.py",
    "tests/xrsession/test_no_runtime.py",
    "tests/xrsession/test_run_failures.py",
    "tests/app/test_console.py::test_on_a_terminal_one_block_is_redrawn_in_place_at_80_120_and_160_columns",
    "tests/app/test_farside.py::test_ring_since_is_the_window_of_values",
    "tests/app/test_mapping.py::test_inlined_quake_angles_are_bit_identical_to_pose_quake_angles",
    "tests/app/test_mapping.py::test_physical_pose_survives_any_locomotion",
    "tests/app/test_mirror_labels.py::test_placed_labels_never_intersect_and_stay_inside",
    "tests/app/test_netsync_link.py::test_other_players_stay_bounded_whatever_client_numbers_the_server_sends",
    "tests/app/test_q3_far_side.py::test_far_side_equals_the_servers_decode_near_the_wrap",
    "tests/app/test_q3_far_side.py::test_the_sweep_disagrees_in_double_and_never_in_float",
    "tests/app/test_rig.py::test_pose_to_world_maps_valid_parts_only",
    "tests/app/test_stop.py::test_a_second_sighup_never_cuts_the_cleanup_short",
    "tests/app/test_tolerances.py::test_relayed_head_position_and_physical_pose_bounds",
    "tests/foundation/test_layout.py::test_dependency_direction",
    "tests/foundation/test_layout.py::test_headcast_subpackages_import_from_repo_root",
    "tests/foundation/test_layout.py::test_pytest_collection_from_repo_root_imports_pyopenxr",
    "tests/foundation/test_layout.py::test_python_c_import_xr_is_pyopenxr",
    "tests/foundation/test_layout.py::test_wheel_ships_the_layout_and_assets",
    "tests/foundation/test_pose.py::test_quake_angles_inverts_angle_vectors",
    "tests/foundation/test_sauer_npos.py::test_decode_encode_matches_the_state_within_quantisation",
    "tests/foundation/test_sauer_npos.py::test_encode_decode_encode_is_exact",
    "tests/foundation/test_sauer_npos.py::test_every_truncation_is_a_typed_error",
    "tests/foundation/test_vrhead.py::test_angle2short_equals_goldsrc_anglemod_on_every_unit_and_its_float_neighbours",
    "tests/mockrt/test_mockrt_build.py::test_build_is_idempotent_and_rebuilds_when_stale",
    "tests/mockrt/test_mockrt_build.py::test_build_script_runs_standalone",
    "tests/mockrt/test_mockrt_motion.py::test_any_text_loads_or_fails_with_a_message",
    "tests/netsync/test_codec_native.py::test_both_paths_match_the_shipped_serializer",
    "tests/netsync/test_codec_native.py::test_decoders_agree_on_every_layout_and_corruption",
    "tests/netsync/test_codec_native.py::test_decoders_agree_on_garbage",
    "tests/netsync/test_codec_native.py::test_decoders_agree_on_garbage_behind_every_flags_byte",
    "tests/netsync/test_codec_native.py::test_encoders_agree_on_any_pose",
    "tests/netsync/test_codec_native.py::test_encoders_agree_on_every_flags_byte",
    "tests/netsync/test_codec_native.py::test_room_decode_agrees_and_refuses_alike",
    "tests/netsync/test_codec_oracle.py::test_decoder_agrees_with_shipped_decoder",
    "tests/netsync/test_codec_oracle.py::test_every_packed_value_decodes_to_a_unit_quaternion",
    "tests/netsync/test_codec_oracle.py::test_property_bytes_equal_the_shipped_serializer",
    "tests/netsync/test_codec_oracle.py::test_random_poses_match_shipped",
    "tests/netsync/test_codec_protocols.py::test_every_flag_combination_matches_its_release",
    "tests/netsync/test_codec_protocols.py::test_fuzz_mutated_messages_of_every_protocol",
    "tests/netsync/test_codec_protocols.py::test_property_bytes_equal_every_release",
    "tests/netsync/test_codec_protocols.py::test_random_poses_match_their_release",
    "tests/netsync/test_codec_strict.py::test_bad_broadcast_leaves_the_client_state_untouched",
    "tests/netsync/test_codec_strict.py::test_bad_mapping_leaves_the_client_state_untouched",
    "tests/netsync/test_codec_strict.py::test_fuzz_mutated_messages",
    "tests/netsync/test_codec_strict.py::test_fuzz_random_bytes",
    "tests/netsync/test_hostile_peer.py::test_100k_distinct_bad_messages_keep_the_core_bounded",
    "tests/q3/test_client_core.py::test_garbage_datagrams_are_counted_drops_and_the_link_survives",
    "tests/q3/test_codec_fastpaths.py::test_a_flag_merged_with_its_value_is_the_same_bits",
    "tests/q3/test_codec_fastpaths.py::test_cached_xor_matches_the_per_byte_rule",
    "tests/q3/test_codec_fastpaths.py::test_huffman_bits_equals_the_bit_writer",
    "tests/q3/test_codec_fastpaths.py::test_netfield_run_skipping_matches_the_per_flag_walk",
    "tests/q3/test_codec_fastpaths.py::test_transmit_with_known_longs_matches_the_read_back",
    "tests/q3/test_codec_fuzz.py::test_adaptive_decompress_random_bytes",
    "tests/q3/test_codec_fuzz.py::test_adaptive_round_trip",
    "tests/q3/test_codec_fuzz.py::test_bitreader_random_bytes_only_msgerror",
    "tests/q3/test_codec_fuzz.py::test_bitwriter_round_trip",
    "tests/q3/test_codec_fuzz.py::test_entity_delta_round_trip",
    "tests/q3/test_codec_fuzz.py::test_entity_reader_random_bytes",
    "tests/q3/test_codec_fuzz.py::test_mutated_valid_deltas_only_msgerror",
    "tests/q3/test_codec_fuzz.py::test_netchan_process_never_raises_and_stays_bounded",
    "tests/q3/test_codec_fuzz.py::test_playerstate_delta_round_trip",
    "tests/q3/test_codec_fuzz.py::test_playerstate_reader_random_bytes",
    "tests/q3/test_codec_fuzz.py::test_usercmd_32bit_round_trip",
    "tests/q3/test_codec_fuzz.py::test_usercmd_reader_random_bytes",
    "tests/q3/test_hostile_server.py::test_100k_distinct_bad_datagrams_keep_the_core_bounded",
    "tests/q3/test_native.py::test_client_datagram_matches_message_then_transmit",
    "tests/q3/test_native.py::test_client_message_matches",
    "tests/q3/test_native.py::test_huffman_bits_matches",
    "tests/q3/test_native.py::test_lenient_long_read_matches",
    "tests/q3/test_native.py::test_the_codec_tests_pass_without_the_extension",
    "tests/q3/test_native.py::test_xor_matches",
    "tests/q3/test_oob.py::test_fuzz_parse_oob_raises_only_oob_error",
    "tests/q3/test_pump.py::test_a_scripted_session_through_the_pump_equals_the_python_loop",
    "tests/q3/test_pump.py::test_garbage_through_the_pump_is_counted_and_the_link_survives",
    "tests/q3/test_pump.py::test_pump_ticks_are_the_python_cores_ticks_byte_for_byte",
    "tests/q3/test_pump.py::test_raw_wire_input_gives_the_cmds_of_the_make_cmd_rules",
    "tests/q3/test_status.py::test_fuzz_clean_equals_the_c_loop",
    "tests/q3/test_status.py::test_fuzz_mutated_real_replies_parse_or_raise_status_error",
    "tests/q3/test_status.py::test_fuzz_random_bytes_only_ever_raise_status_error",
    "tests/q3/test_status.py::test_fuzz_what_a_server_could_send_round_trips",
    "tests/q3/test_vectors_huffman.py::test_committed_code_table_is_the_replay_of_msg_hdata",
    "tests/sauer/test_codecs.py::test_parsers_never_crash_on_garbage",
    "tests/sauer/test_hostile_server.py::test_100k_distinct_bad_packets_keep_the_drop_counters_bounded",
    "tests/sauer/test_hostile_server.py::test_a_thousand_nested_n_client_headers_parse_without_recursion",
    "tests/swarm/test_metrics.py::test_merged_histograms_are_the_histogram_of_all_values",
    "tests/swarm/test_metrics.py::test_out_of_range_values_are_counted_and_clamped",
    "tests/swarm/test_metrics.py::test_percentiles_within_the_stated_error_of_numpy",
    "tests/swarm/test_metrics.py::test_second_histogram_within_its_coarse_error",
    "tests/swarm/test_motion.py::test_any_text_is_a_motion_or_a_motion_error",
    "tests/swarm/test_refusals.py::test_the_same_seed_gives_the_same_variation",
    "tests/xrsession/test_fastframe.py::test_build_is_idempotent_and_load_needs_a_library",
    "tests/xrsession/test_fastframe.py::test_native_builder_equals_the_python_builder",
    "tests/xrsession/test_fastframe.py::test_native_frames_leak_nothing",
    "tests/xrsession/test_pose_guard.py::test_any_location_gives_a_finite_unit_valid_pose_or_flags_off",
    "tests/xrsession/test_trace_file.py::test_any_json_frame_line_is_a_frame_or_a_trace_error",
    "tests/xrsession/test_trace_file.py::test_disk_full_keeps_the_whole_frames_and_no_torn_line",
    "tests/xrsession/test_trace_file.py::test_kill_9_keeps_every_frame_written",
    "tests/xrsession/test_trace_file.py::test_round_trip_is_bit_exact",
)
