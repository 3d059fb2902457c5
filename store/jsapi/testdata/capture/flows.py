# Captures nats-server v2.15.2 JetStream API responses for store/jsapi tests
# (client flows: streams, KV/OBJ streams, publishes, consumers). See README.
import json, os, subprocess, sys
NATS = os.environ.get("NATS", "nats")
URL = os.environ.get("NATS_URL", "nats://127.0.0.1:4222")
cases = []
def req(name, subject, body="", headers=None):
    cmd = [NATS, "-s", URL, "req", "--raw", "--timeout", "2s", subject, body]
    for h in headers or []:
        cmd += ["-H", h]
    out = subprocess.run(cmd, capture_output=True, text=True)
    raw = out.stdout.strip()
    try:
        resp = json.loads(raw)
    except Exception:
        print("non-json", name, raw, out.stderr, file=sys.stderr)
        resp = raw
    try:
        req_obj = json.loads(body) if body.strip().startswith("{") else body
    except Exception:
        req_obj = body
    c = {"name": name, "subject": subject}
    if headers:
        c["headers"] = headers
    c["request"] = req_obj
    c["response"] = resp
    cases.append(c)

S = "$JS.API.STREAM."
C = "$JS.API.CONSUMER."
req("account_info", "$JS.API.INFO")
req("stream_create_minimal", S+"CREATE.ORDERS", '{"name":"ORDERS"}')
req("stream_create_identical", S+"CREATE.ORDERS", '{"name":"ORDERS"}')
req("stream_create_name_exists", S+"CREATE.ORDERS", '{"name":"ORDERS","max_msgs":10}')
req("stream_create_full", S+"CREATE.FULL", json.dumps({
  "name":"FULL","description":"all the knobs","subjects":["full.>","other.*"],"retention":"limits",
  "max_consumers":0,"max_msgs":0,"max_bytes":-5,"max_age":3600000000000,"max_msgs_per_subject":5,
  "max_msg_size":0,"discard":"new","storage":"memory","num_replicas":0,"duplicate_window":0,
  "compression":"none","allow_direct":True,"mirror_direct":False,"sealed":False,"deny_delete":True,
  "deny_purge":False,"allow_rollup_hdrs":True,"discard_new_per_subject":True,
  "consumer_limits":{"inactive_threshold":60000000000,"max_ack_pending":2000},
  "subject_delete_marker_ttl":2000000000,"metadata":{"owner":"ops"},"first_seq":100,
  "placement":{}, "republish":{"dest":"rp.>"}}))
req("stream_create_kv", S+"CREATE.KV_cfg", json.dumps({
  "name":"KV_cfg","subjects":["$KV.cfg.>"],"retention":"limits","max_consumers":-1,"max_msgs":-1,
  "max_bytes":-1,"discard":"new","max_age":0,"max_msgs_per_subject":1,"max_msg_size":-1,
  "storage":"file","num_replicas":1,"duplicate_window":120000000000,"allow_rollup_hdrs":True,
  "deny_delete":True,"compression":"none","allow_direct":True,"mirror_direct":False,"allow_msg_ttl":False}))
req("stream_create_obj", S+"CREATE.OBJ_files", json.dumps({
  "name":"OBJ_files","subjects":["$O.files.C.>","$O.files.M.>"],"retention":"limits","max_consumers":0,
  "max_msgs":0,"max_bytes":-1,"discard":"new","max_age":0,"max_msgs_per_subject":0,"storage":"file",
  "num_replicas":1,"allow_rollup_hdrs":True,"compression":"s2","allow_direct":True,"mirror_direct":False}))
req("stream_create_dupwindow_capped", S+"CREATE.SHORT", '{"name":"SHORT","max_age":30000000000}')
req("stream_create_workqueue", S+"CREATE.JOBS", '{"name":"JOBS","subjects":["jobs.*"],"retention":"workqueue"}')
req("stream_create_interest", S+"CREATE.EVENTS", '{"name":"EVENTS","subjects":["events.>"],"retention":"interest","allow_msg_ttl":true}')
req("stream_create_limits_new", S+"CREATE.TINY", '{"name":"TINY","subjects":["tiny"],"max_msgs":1,"discard":"new","max_msg_size":16}')
# errors
req("stream_create_mismatch", S+"CREATE.ONE", '{"name":"TWO"}')
req("stream_create_bad_name", S+"CREATE.bad>name", '{"name":"bad>name"}')
req("stream_create_sealed", S+"CREATE.SEALED", '{"name":"SEALED","sealed":true}')
req("stream_create_mirror_direct", S+"CREATE.MD", '{"name":"MD","mirror_direct":true}')
req("stream_create_replicas", S+"CREATE.R3", '{"name":"R3","num_replicas":3}')
req("stream_create_replicas_negative", S+"CREATE.RN", '{"name":"RN","num_replicas":-1}')
req("stream_create_small_max_age", S+"CREATE.AGE", '{"name":"AGE","max_age":50000000}')
req("stream_create_dup_gt_age", S+"CREATE.DUP", '{"name":"DUP","max_age":1000000000,"duplicate_window":2000000000}')
req("stream_create_rollup_deny_purge", S+"CREATE.RDP", '{"name":"RDP","allow_rollup_hdrs":true,"deny_purge":true}')
req("stream_create_dnps_old", S+"CREATE.DNP", '{"name":"DNP","discard_new_per_subject":true,"max_msgs_per_subject":1}')
req("stream_create_self_overlap", S+"CREATE.OV", '{"name":"OV","subjects":["ov.*","ov.a"]}')
req("stream_create_capture_all", S+"CREATE.ALL", '{"name":"ALL","subjects":[">"]}')
req("stream_create_js_api", S+"CREATE.API", '{"name":"API","subjects":["$JS.API.>"]}')
req("stream_create_dup_subjects", S+"CREATE.DS", '{"name":"DS","subjects":["ds","ds"]}')
req("stream_create_invalid_subject", S+"CREATE.IS", '{"name":"IS","subjects":["foo..bar"]}')
req("stream_create_overlap_existing", S+"CREATE.OVX", '{"name":"OVX","subjects":["jobs.a"]}')
req("stream_create_invalid_json", S+"CREATE.BAD", '{"name":')
req("stream_create_bad_retention", S+"CREATE.BR", '{"name":"BR","retention":"forever"}')
req("stream_create_mirror_subjects", S+"CREATE.MIR", '{"name":"MIR","subjects":["m"],"mirror":{"name":"ORDERS"}}')
req("stream_create_marker_ttl_small", S+"CREATE.MT", '{"name":"MT","subject_delete_marker_ttl":500000000}')
# other stream APIs
req("stream_update_missing", S+"UPDATE.NOPE", '{"name":"NOPE"}')
req("stream_update_storage", S+"UPDATE.ORDERS", '{"name":"ORDERS","storage":"memory"}')
req("stream_update_ok", S+"UPDATE.ORDERS", '{"name":"ORDERS","max_msgs":1000,"description":"updated"}')
req("stream_update_workqueue", S+"UPDATE.ORDERS", '{"name":"ORDERS","retention":"workqueue"}')
req("stream_info_missing", S+"INFO.NOPE")
req("pub_ack", "ORDERS", "hello")
req("pub_ack_msgid", "ORDERS", "hello", ["Nats-Msg-Id:m1"])
req("pub_ack_duplicate", "ORDERS", "hello", ["Nats-Msg-Id:m1"])
req("pub_wrong_last_seq", "ORDERS", "x", ["Nats-Expected-Last-Sequence:99"])
req("pub_wrong_last_msg_id", "ORDERS", "x", ["Nats-Expected-Last-Msg-Id:nope"])
req("pub_wrong_stream", "ORDERS", "x", ["Nats-Expected-Stream:OTHER"])
req("pub_wrong_last_subject_seq", "ORDERS", "x", ["Nats-Expected-Last-Subject-Sequence:0"])
req("pub_ttl_disabled", "ORDERS", "x", ["Nats-TTL:5s"])
req("pub_ttl_invalid", "events.a", "x", ["Nats-TTL:bogus"])
req("pub_rollup_not_permitted", "ORDERS", "x", ["Nats-Rollup:sub"])
req("pub_max_msgs", "tiny", "1")
req("pub_max_msgs_rejected", "tiny", "2")
req("pub_too_big", "ORDERS", "y", [])
req("stream_info", S+"INFO.ORDERS")
req("stream_info_subjects", S+"INFO.ORDERS", '{"subjects_filter":">"}')
req("stream_names", S+"NAMES", '{"subject":"$KV.*.>"}')
req("stream_names_all", S+"NAMES")
req("stream_msg_get", S+"MSG.GET.ORDERS", '{"seq":1}')
req("stream_msg_get_last", S+"MSG.GET.ORDERS", '{"last_by_subj":"ORDERS"}')
req("stream_msg_get_missing", S+"MSG.GET.ORDERS", '{"seq":999}')
req("stream_msg_delete", S+"MSG.DELETE.ORDERS", '{"seq":1}')
req("stream_msg_delete_denied", S+"MSG.DELETE.KV_cfg", '{"seq":1}')
req("stream_purge", S+"PURGE.ORDERS", '{"filter":"ORDERS","keep":1}')
req("stream_delete", S+"DELETE.SHORT")
req("stream_delete_missing", S+"DELETE.SHORT")
# consumers
def cc(name, subject, cfg, action=None, stream="ORDERS"):
    body = {"stream_name": stream, "config": cfg}
    if action is not None: body["action"] = action
    req(name, C+subject, json.dumps(body))
cc("consumer_create_pull_ephemeral", "CREATE.ORDERS.eph1", {"ack_policy":"explicit"})
cc("consumer_create_pull_durable", "CREATE.ORDERS.dur1", {"durable_name":"dur1","ack_policy":"explicit","deliver_policy":"all","replay_policy":"instant"}, "create")
cc("consumer_create_same", "CREATE.ORDERS.dur1", {"durable_name":"dur1","ack_policy":"explicit","deliver_policy":"all","replay_policy":"instant"}, "create")
cc("consumer_create_exists", "CREATE.ORDERS.dur1", {"durable_name":"dur1","ack_policy":"explicit","max_deliver":3}, "create")
cc("consumer_update_missing", "CREATE.ORDERS.nope", {"durable_name":"nope","ack_policy":"explicit"}, "update")
cc("consumer_update_ok", "CREATE.ORDERS.dur1", {"durable_name":"dur1","ack_policy":"explicit","max_deliver":3,"description":"d"}, "update")
cc("consumer_update_ack_policy", "CREATE.ORDERS.dur1", {"durable_name":"dur1","ack_policy":"all"})
cc("consumer_create_filtered", "CREATE.ORDERS.filt.ORDERS", {"ack_policy":"explicit","filter_subject":"ORDERS"})
cc("consumer_create_filter_mismatch", "CREATE.ORDERS.filt2.ORDERS", {"ack_policy":"explicit","filter_subject":"other"})
cc("consumer_create_filter_subjects_with_token", "CREATE.ORDERS.filt3.ORDERS", {"ack_policy":"explicit","filter_subjects":["ORDERS"]})
cc("consumer_create_durable_mismatch", "CREATE.ORDERS.abc", {"durable_name":"xyz","ack_policy":"explicit"})
cc("consumer_create_stream_mismatch", "CREATE.ORDERS.abc", {"ack_policy":"explicit"}, stream="OTHER")
cc("consumer_create_legacy_ephemeral_durable", "CREATE.ORDERS", {"durable_name":"x","ack_policy":"explicit"})
cc("consumer_create_legacy_ephemeral", "CREATE.ORDERS", {"ack_policy":"none","deliver_subject":"deliver.here","idle_heartbeat":5000000000,"flow_control":True})
cc("consumer_create_legacy_durable", "DURABLE.CREATE.ORDERS.leg", {"durable_name":"leg","ack_policy":"explicit"})
cc("consumer_create_legacy_durable_unset", "DURABLE.CREATE.ORDERS.leg2", {"ack_policy":"explicit"})
cc("consumer_create_fc_no_hb", "CREATE.ORDERS.fc", {"ack_policy":"none","deliver_subject":"fc.x","flow_control":True})
cc("consumer_create_hb_pull", "CREATE.ORDERS.hbp", {"ack_policy":"explicit","idle_heartbeat":5000000000})
cc("consumer_create_small_hb", "CREATE.ORDERS.shb", {"ack_policy":"none","deliver_subject":"shb.x","idle_heartbeat":50000000})
cc("consumer_create_push_max_waiting", "CREATE.ORDERS.pmw", {"ack_policy":"none","deliver_subject":"pmw.x","max_waiting":5})
cc("consumer_create_last_per_subject_nofilter", "CREATE.ORDERS.lps", {"ack_policy":"none","deliver_policy":"last_per_subject"})
cc("consumer_create_start_seq_missing", "CREATE.ORDERS.ss", {"ack_policy":"none","deliver_policy":"by_start_sequence"})
cc("consumer_create_backoff", "CREATE.ORDERS.bo", {"durable_name":"bo","ack_policy":"explicit","backoff":[1000000000,5000000000],"max_deliver":5})
cc("consumer_create_backoff_gt_max_deliver", "CREATE.ORDERS.bo2", {"ack_policy":"explicit","backoff":[1000000000,5000000000,9000000000],"max_deliver":2})
cc("consumer_create_overlapping_filters", "CREATE.ORDERS.of", {"ack_policy":"explicit","filter_subjects":["a.>","a.b"]})
cc("consumer_create_filter_and_filters", "CREATE.ORDERS.ff", {"ack_policy":"explicit","filter_subject":"a","filter_subjects":["b"]})
cc("consumer_create_replicas", "CREATE.ORDERS.r3", {"ack_policy":"explicit","num_replicas":3})
cc("consumer_create_stream_missing", "CREATE.NOPE.c", {"ack_policy":"explicit"}, stream="NOPE")
cc("consumer_create_kv_watch", "CREATE.KV_cfg.watch1.$KV.cfg.>", {"name":"watch1","deliver_policy":"last_per_subject","ack_policy":"none","ack_wait":79200000000000,"max_deliver":1,"filter_subject":"$KV.cfg.>","replay_policy":"instant","flow_control":True,"idle_heartbeat":5000000000,"headers_only":False,"deliver_subject":"_INBOX.abc","num_replicas":1,"mem_storage":True}, stream="KV_cfg")
cc("consumer_create_wq_ack_none", "CREATE.JOBS.w0", {"ack_policy":"none"}, stream="JOBS")
cc("consumer_create_wq_first", "CREATE.JOBS.w1", {"durable_name":"w1","ack_policy":"explicit","filter_subject":"jobs.a"}, stream="JOBS")
cc("consumer_create_wq_overlap", "CREATE.JOBS.w2", {"durable_name":"w2","ack_policy":"explicit","filter_subject":"jobs.*"}, stream="JOBS")
cc("consumer_create_wq_unfiltered", "CREATE.JOBS.w3", {"durable_name":"w3","ack_policy":"explicit"}, stream="JOBS")
cc("consumer_create_wq_deliver_new", "CREATE.JOBS.w4", {"durable_name":"w4","ack_policy":"explicit","deliver_policy":"new","filter_subject":"jobs.b"}, stream="JOBS")
cc("consumer_create_stream_limits", "CREATE.FULL.lim", {"ack_policy":"explicit"}, stream="FULL")
cc("consumer_create_stream_limits_exceeded", "CREATE.FULL.lim2", {"ack_policy":"explicit","max_ack_pending":5000}, stream="FULL")
req("consumer_info", C+"INFO.ORDERS.dur1")
req("consumer_info_missing", C+"INFO.ORDERS.nope")
req("consumer_names", C+"NAMES.ORDERS")
req("consumer_pause", C+"PAUSE.ORDERS.dur1", '{"pause_until":"2099-01-01T00:00:00Z"}')
req("consumer_delete", C+"DELETE.ORDERS.dur1")
req("consumer_delete_missing", C+"DELETE.ORDERS.dur1")
req("not_empty_request", C+"DELETE.ORDERS.bo", '{"x":1}')
json.dump(cases, open(sys.argv[1], "w"), indent=1)
print(len(cases))
