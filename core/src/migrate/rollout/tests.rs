use crate::migrate::rollout::*;

fn waves(texts: &[&str]) -> Vec<WaveStep> {
    texts.iter().map(|t| t.parse().unwrap()).collect()
}

#[test]
fn waves_are_read_and_written_back() {
    for text in [
        "t1,t2:approve",
        "10%:soak=600",
        "rest",
        "a",
        "10%:approve:budget=5%",
        "rest:budget=2",
        "tier=internal,beta:approve",
    ] {
        assert_eq!(text.parse::<WaveStep>().unwrap().to_string(), text);
    }
    assert_eq!("10%".parse::<WaveStep>().unwrap().select.wave(), Wave::Share(10));
    assert_eq!("rest".parse::<WaveStep>().unwrap().select.wave(), Wave::All);
    assert_eq!(
        "Tier=internal:soak=60".parse::<WaveStep>().unwrap().select.wave(),
        Wave::Attribute { name: "tier".into(), values: vec!["internal".into()] }
    );
    assert_eq!("t1:budget=3:approve".parse::<WaveStep>().unwrap().to_string(), "t1:approve:budget=3");
    for bad in [
        "101%",
        "x%",
        "t1,,t2",
        "rest:soak=0",
        "rest:later",
        "",
        "t1:approve:approve",
        "t1:budget=x",
        "t1:budget=1:budget=2",
        "tier=",
        "=internal",
        "tier=a,,b",
    ] {
        assert_eq!(bad.parse::<WaveStep>(), Err(RolloutError::BadWave(bad.to_string())), "{bad}");
    }
    assert_eq!(Rollout::new("v", vec![], None, 0, "r").unwrap_err(), RolloutError::NoWave);
    assert_eq!(Rollout::new("v", waves(&["rest", "t1"]), None, 0, "r").unwrap_err(), RolloutError::RestNotLast);
}

#[test]
fn gates_hold_the_next_wave_until_they_open() {
    let mut r = Rollout::new("v", waves(&["t1:approve", "10%:soak=60", "rest"]), None, 100, "req-1").unwrap();
    assert_eq!(r.next(100), Next::Run(0));
    r.claim(0, 100, 400, "runner");
    assert_eq!(r.next(101), Next::WaitUntil(400), "claimed");
    assert_eq!(r.next(401), Next::Run(0), "a claim whose runner died expires");
    assert!(r.wave_ended(0, Ok("version 10".into()), 110, "runner"));
    assert!(!r.wave_ended(0, Ok("late twin".into()), 111, "other"), "a wave's result counts once");
    assert_eq!(r.status, Status::AwaitingApproval);
    assert_eq!(r.next(10_000), Next::Nothing);
    r.approve(120, "req-2", &ApprovalRules::default()).unwrap();
    assert_eq!(r.next(120), Next::Run(1));
    r.claim(1, 120, 420, "runner");
    assert!(r.wave_ended(1, Ok("version 11".into()), 130, "runner"));
    assert_eq!((r.status, r.next(150)), (Status::Soaking, Next::WaitUntil(190)));
    r.pause(160, "req-3").unwrap();
    assert_eq!(r.next(1_000), Next::Nothing);
    r.resume(170, "req-4").unwrap();
    assert_eq!((r.status, r.next(191)), (Status::Soaking, Next::Run(2)));
    r.claim(2, 191, 500, "runner");
    assert!(r.wave_ended(2, Ok("version 12".into()), 200, "runner"));
    assert_eq!(r.status, Status::Completed);
    let actions: Vec<&str> = r.events.iter().map(|e| e.action.as_str()).collect();
    assert_eq!(
        actions,
        [
            "started",
            "wave-started",
            "wave-completed",
            "approved",
            "wave-started",
            "wave-completed",
            "paused",
            "resumed",
            "wave-started",
            "wave-completed",
            "completed"
        ]
    );
    assert_eq!(r.events[3].request_id, "req-2");
    assert_eq!(Rollout::from_json(&r.to_json()).unwrap(), r);
}

#[test]
fn a_failed_wave_stops_the_rollout_until_resumed() {
    let mut r = Rollout::new("v", waves(&["t1", "rest"]), Some("2".into()), 0, "req").unwrap();
    r.claim(0, 0, 300, "runner");
    assert!(r.wave_ended(0, Err("t1: syntax error".into()), 5, "runner"));
    assert_eq!((r.status, r.position, r.next(10)), (Status::Stopped, 0, Next::Nothing));
    assert_eq!(
        r.approve(6, "x", &ApprovalRules::default()).unwrap_err().to_string(),
        "the rollout is STOPPED: approve applies to a rollout awaiting approval"
    );
    r.resume(7, "req-2").unwrap();
    assert_eq!(r.next(7), Next::Run(0), "the failed wave runs again");
    assert!(r.wave_version_name(1).starts_with("v (wave 2/2: rest)"));
}

#[test]
fn an_active_rollout_holds_versions_over_the_fleet_until_completed_or_cancelled() {
    let mut r = Rollout::new("v2", waves(&["t1:approve", "rest"]), None, 100, "req-1").unwrap();
    r.claim(0, 100, 400, "runner");
    assert!(r.wave_ended(0, Ok("version 3".into()), 110, "runner"));
    let done = Rollout { status: Status::Completed, ..r.clone() };
    let held = active([(3, &r), (4, &done)]);
    assert_eq!(
        held,
        [ActiveRollout {
            id: 3,
            version_name: "v2".into(),
            status: "AWAITING_APPROVAL".into(),
            waves_done: 1,
            waves: 2
        }]
    );
    assert_eq!(
        InProgress(held).to_string(),
        "rollout 3 (\"v2\", 1/2 waves done, AWAITING_APPROVAL) is in progress: a version over the fleet now would run \
         its files on tenants whose waves are not due. Let it finish (approve or resume it), cancel it (`strata \
         rollout cancel ID`), or override it explicitly (`strata apply --override-rollout`, overrideRollout: true; \
         recorded in the rollout's events)"
    );

    r.overridden(115, "req-2", "hotfix");
    r.cancel(120, "req-3").unwrap();
    assert!(!r.is_active());
    assert_eq!(r.next(10_000), Next::Nothing);
    assert!(!r.wave_ended(1, Ok("late".into()), 130, "runner"), "a cancelled rollout takes no wave");
    assert!(r.approve(130, "req-4", &ApprovalRules::default()).is_err() && r.resume(130, "req-4").is_err());
    assert_eq!(
        r.cancel(130, "req-5").unwrap_err().to_string(),
        "the rollout is CANCELLED: cancel applies to a rollout not yet completed or cancelled"
    );
    let actions: Vec<&str> = r.events.iter().map(|e| e.action.as_str()).collect();
    assert_eq!(actions[actions.len() - 2..], ["overridden", "cancelled"]);
    assert_eq!(r.events[r.events.len() - 2].request_id, "req-2");
    assert!(active([(3, &r)]).is_empty());
}

fn files(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs.iter().map(|(f, c)| (f.to_string(), c.to_string())).collect()
}

#[test]
fn the_starter_cannot_approve_their_own_rollout_when_the_rule_is_on() {
    let alice = By { request_id: "r1", actor: "token:alice", principal: "token:alice", trace: "" };
    let bob = By { request_id: "r2", actor: "token:bob", principal: "token:bob", trace: "" };
    let mut r = Rollout::new("v", waves(&["t1:approve", "rest"]), None, 0, alice).unwrap();
    assert_eq!(r.started_by, "token:alice");
    assert!(r.wave_ended(0, Ok("done".into()), 5, "runner"));
    let rules = ApprovalRules { forbid_self_approval: true, files_now: None };
    let refused = r.approve(6, alice, &rules).unwrap_err();
    assert_eq!(refused, RolloutError::SelfApproval { starter: "token:alice".into(), approver: "token:alice".into() });
    assert!(refused.to_string().starts_with("token:alice started this rollout, and token:alice is the same person"));
    assert_eq!(r.status, Status::AwaitingApproval);
    r.approve(7, bob, &rules).unwrap();
    let approved = r.events.last().unwrap();
    assert_eq!((approved.action.as_str(), approved.actor.as_str()), ("approved", "token:bob"));
    // Without the rule (no identities configured), the starter may.
    let mut r = Rollout::new("v", waves(&["t1:approve", "rest"]), None, 0, alice).unwrap();
    r.wave_ended(0, Ok(String::new()), 5, "runner");
    r.approve(6, alice, &ApprovalRules::default()).unwrap();
}

#[test]
fn one_principal_is_one_starter_whatever_its_display_name() {
    let rules = ApprovalRules { forbid_self_approval: true, files_now: None };
    let access = By { request_id: "r1", actor: "oidc:alice", principal: "oidc:https://idp#alice", trace: "" };
    let id_token = By {
        request_id: "r2",
        actor: "oidc:alice <alice@example.com>",
        principal: "oidc:https://idp#alice",
        trace: "",
    };
    let other_idp = By { request_id: "r3", actor: "oidc:alice", principal: "oidc:https://other#alice", trace: "" };
    let mut r = Rollout::new("v", waves(&["t1:approve", "rest"]), None, 0, access).unwrap();
    assert_eq!(r.started_by_principal, "oidc:https://idp#alice");
    r.wave_ended(0, Ok(String::new()), 5, "runner");
    // The same subject with an email claim is the same person.
    assert_eq!(
        r.approve(6, id_token, &rules),
        Err(RolloutError::SelfApproval {
            starter: "oidc:alice [oidc:https://idp#alice]".into(),
            approver: "oidc:alice <alice@example.com> [oidc:https://idp#alice]".into()
        })
    );
    // The same display name from another issuer is someone else.
    r.approve(7, other_idp, &rules).unwrap();
    let approved = r.events.last().unwrap();
    assert_eq!((approved.actor.as_str(), approved.principal.as_str()), ("oidc:alice", "oidc:https://other#alice"));
    // A rollout stored before principals compares display names.
    let mut old = Rollout::new("v", waves(&["t1:approve", "rest"]), None, 0, "r").unwrap();
    old.started_by = "token:alice".into();
    old.wave_ended(0, Ok(String::new()), 5, "runner");
    let alice = By { request_id: "r4", actor: "token:alice", principal: "token:alice", trace: "" };
    assert!(old.approve(8, alice, &rules).is_err());
}

#[test]
fn a_wave_runs_the_files_the_rollout_started_with_or_nothing() {
    let started = files(&[("m/1.sql", "aa"), ("m/2.sql", "bb")]);
    assert_eq!(check_wave_files(&started, &started), Ok(()));
    assert_eq!(check_wave_files(&BTreeMap::new(), &files(&[("m/9.sql", "zz")])), Ok(()));
    let refused = check_wave_files(&started, &files(&[("m/1.sql", "aa"), ("m/2.sql", "bb"), ("m/3.sql", "cc")]));
    assert_eq!(refused, Err(RolloutError::WaveFilesChanged(vec!["added: m/3.sql".into()])));
    assert!(refused.unwrap_err().to_string().contains("nothing of it ran"));
}

#[test]
fn approving_after_a_source_file_changed_is_refused_with_what_changed() {
    let started = files(&[("m/1.sql", "aa"), ("m/2.sql", "bb"), ("m/3.sql", "cc")]);
    let mut r = Rollout::new("v", waves(&["t1:approve", "rest"]), None, 0, "r").unwrap().with_files(started.clone());
    r.wave_ended(0, Ok(String::new()), 5, "runner");
    let now = files(&[("m/1.sql", "aa"), ("m/2.sql", "XX"), ("m/4.sql", "dd")]);
    let rules = ApprovalRules { forbid_self_approval: false, files_now: Some(now) };
    let refused = r.approve(6, "r2", &rules).unwrap_err();
    assert_eq!(
        refused,
        RolloutError::PlanChanged(vec!["changed: m/2.sql".into(), "removed: m/3.sql".into(), "added: m/4.sql".into()])
    );
    assert!(refused.to_string().contains("cancel it and start a new rollout"));
    let same = ApprovalRules { forbid_self_approval: false, files_now: Some(started) };
    r.approve(7, "r3", &same).unwrap();
}

#[test]
fn rollouts_stored_before_identities_read_back() {
    // A rollout without identities is stored as before: no new keys.
    let old = Rollout::new("v", waves(&["rest"]), None, 1, "r").unwrap().to_json();
    assert!(!old.contains("startedBy") && !old.contains("files") && !old.contains("actor"), "{old}");
    let r = Rollout::from_json(&old).unwrap();
    assert_eq!(r.started_by, "");
    assert!(r.files.is_empty());
    assert_eq!(r.events[0].actor, "");
}

#[test]
fn a_wave_naming_a_tenant_the_fleet_lacks_is_refused_at_the_start() {
    let tenants = vec!["t1".to_string(), "t2".to_string()];
    assert_eq!(check_named_tenants(&waves(&["t1,t2:approve", "10%", "rest"]), &tenants), Ok(()));
    assert_eq!(
        check_named_tenants(&waves(&["t1", "t9:approve", "rest"]), &tenants),
        Err(crate::migrate::wave::WaveError::NotATenant("t9".into()))
    );
}

fn in_progress(ids: &[i64]) -> Vec<ActiveRollout> {
    ids.iter()
        .map(|&id| ActiveRollout {
            id,
            version_name: format!("release {id}"),
            status: "soaking".into(),
            waves_done: 1,
            waves: 3,
        })
        .collect()
}

#[test]
fn the_gate_is_read_only_by_versions_rollouts_hold() {
    assert!(FleetGate::Hold.applies(true, false, true));
    assert!(FleetGate::Override.applies(true, false, true));
    assert!(!FleetGate::Hold.applies(false, false, true), "a retry or a new tenant is not held");
    assert!(!FleetGate::Hold.applies(true, true, true), "a dry run is not held");
    assert!(!FleetGate::Wave.applies(true, false, true), "a rollout's own wave is not held");
    assert!(!FleetGate::Hold.applies(true, false, false), "an engine without rollouts holds nothing");
}

#[test]
fn a_held_version_is_refused_an_override_runs_over_every_rollout_in_progress() {
    assert_eq!(FleetGate::Hold.judge(Vec::new()), AtFleetGate::Runs);
    assert_eq!(FleetGate::Override.judge(Vec::new()), AtFleetGate::Runs);
    assert_eq!(FleetGate::Hold.judge(in_progress(&[4, 7])), AtFleetGate::Refused(InProgress(in_progress(&[4, 7]))));
    assert_eq!(FleetGate::Override.judge(in_progress(&[4, 7])), AtFleetGate::Overrides(in_progress(&[4, 7])));
    assert_eq!(FleetGate::Wave.judge(in_progress(&[4])), AtFleetGate::Runs);
}

#[test]
fn a_wave_waiting_on_its_backfills_keeps_its_claim_while_it_is_still_its_runners() {
    let mut r = Rollout::new("v", waves(&["t1", "rest"]), None, 100, "req-1").unwrap();
    r.claim(0, 100, 160, "runner");
    assert!(r.renew(0, 220, "runner"));
    assert_eq!(r.next(200), Next::WaitUntil(220), "renewed: no other runner takes the wave");
    assert!(!r.renew(0, 280, "other"), "only the runner that started the wave renews it");
    assert!(!r.renew(1, 280, "runner"), "not the wave in progress");
    assert_eq!(r.events.iter().filter(|e| e.action == "wave-started").count(), 1, "a renewal is no event");
    r.claim(0, 300, 360, "other"); // the claim expired: another runner took the wave over
    assert!(!r.renew(0, 400, "runner"), "the first runner's claim is gone");
    assert!(r.wave_ended(0, Ok("version 10".into()), 310, "other"));
    assert!(!r.renew(0, 400, "other"), "the wave ended");
}

#[test]
fn a_named_wave_run_again_goes_on_without_the_tenants_its_earlier_run_quarantined() {
    let mut r = Rollout::new("v", waves(&["t1", "t2,t3,t4:budget=1", "rest"]), None, 0, "req-1").unwrap();
    r.claim(0, 10, 70, "runner-a");
    assert!(r.wave_ended(0, Ok(String::new()), 20, "runner-a"));
    r.claim(1, 30, 90, "runner-a"); // absorbed t3's failure, then killed
    r.claim(1, 100, 160, "runner-b"); // its claim expired: b runs the wave again
    let quarantine = [("t3", "runner-a"), ("t4", "req-9"), ("t1", "runner-a")];
    // t4 was put aside by someone else before: the wave still names it (and is refused).
    assert_eq!(r.wave_runs_without(1, 0, quarantine), BTreeSet::from(["t1", "t3"]));
    // After its backfills, a round runs without every quarantined tenant.
    assert_eq!(r.wave_runs_without(1, 1, quarantine), BTreeSet::from(["t1", "t3", "t4"]));
    // Wave 1's runners did not run wave 2: none of theirs is left out there.
    assert_eq!(r.wave_runs_without(2, 0, [("t3", "runner-a")]), BTreeSet::new());
    // Stored and read back, the rule holds.
    let stored: Rollout = serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
    assert_eq!(stored.wave_runs_without(1, 0, quarantine), BTreeSet::from(["t1", "t3"]));
}

#[test]
fn a_waves_version_links_to_the_start_and_to_that_waves_approvals() {
    let start = "00-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa-1111111111111111-01";
    let approval = "00-bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb-2222222222222222-01";
    let by = |request_id, trace| By { request_id, actor: "", principal: "", trace };
    let mut r = Rollout::new("v", waves(&["t1:approve", "t2:approve", "rest"]), None, 0, by("r1", start)).unwrap();
    assert_eq!(r.wave_links(0), [start]);
    assert!(r.wave_ended(0, Ok(String::new()), 5, "runner"));
    r.approve(6, by("r2", approval), &ApprovalRules::default()).unwrap();
    assert_eq!(r.wave_links(1), [start, approval]);
    assert!(r.wave_ended(1, Ok(String::new()), 7, "runner"));
    // An approval without a trace links nothing; another wave's is not this one's.
    r.approve(8, by("r3", ""), &ApprovalRules::default()).unwrap();
    assert_eq!(r.wave_links(2), [start]);
    // Stored and read back, the traces stay.
    let stored: Rollout = serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
    assert_eq!(stored.wave_links(1), [start, approval]);
}

#[test]
fn a_rollouts_waves_and_name_are_bounded_and_a_wave_of_many_names_keeps_its_version_name_short() {
    assert_eq!(check_wave_count(MAX_WAVES), Ok(()));
    assert_eq!(check_wave_count(150_000), Err(RolloutError::TooManyWaves(150_000)));
    let too_many = vec!["rest".parse::<WaveStep>().unwrap(); MAX_WAVES + 1];
    assert!(Rollout::new("r", too_many, None, 0, "request").is_err());
    assert!(check_name("release\n2026-12-06 INFO forged").is_err());
    assert!(check_name(&"r".repeat(400)).unwrap_err().contains("over 370 for a rollout"));
    let names: Vec<String> = (0..300).map(|i| format!("tenant{i:03}")).collect();
    let rollout =
        Rollout::new("r".repeat(370).as_str(), waves(&[&names.join(","), "rest"]), None, 0, "request").unwrap();
    let name = rollout.wave_version_name(0);
    assert!(name.ends_with(" characters))") && name.contains("(wave 1/2: tenant000,"), "{name}");
    assert_eq!(crate::migrate::ident::check_version_name(&name), Ok(()));
}

#[test]
fn a_soak_past_a_year_is_refused_and_a_second_rollout_waits_for_the_first() {
    assert!("t1:soak=31622400".parse::<WaveStep>().is_ok());
    for huge in ["t1:soak=31622401", "t1:soak=18446744073709551615", "t1:soak=99999999999999999999"] {
        assert!(huge.parse::<WaveStep>().is_err(), "{huge}");
    }
    let first = Rollout::new("x", waves(&["t1:approve", "rest"]), None, 0, "request").unwrap();
    let active = active([(3, &first)]);
    assert_eq!(check_none_active(&[]), Ok(()));
    let refused = check_none_active(&active).unwrap_err().to_string();
    assert!(refused.starts_with("rollout 3 (\"x\", 0/2 waves done, "), "{refused}");
    assert!(refused.contains("a second rollout would run its files on tenants whose waves are not due"), "{refused}");
}

#[test]
fn a_wave_paused_while_it_runs_keeps_its_claim_and_ends_as_the_rollouts() {
    let mut r = Rollout::new("v", waves(&["t1:approve", "rest"]), None, 0, "req").unwrap();
    r.claim(0, 10, 70, "runner-a");
    r.pause(20, "ops").unwrap();
    assert!(r.renew(0, 80, "runner-a"), "its runner keeps it while paused");
    r.resume(30, "ops").unwrap();
    assert_eq!(r.next(40), Next::WaitUntil(80), "resumed: no other runner takes the running wave");
    r.pause(50, "ops").unwrap();
    assert!(r.wave_ended(0, Ok("version 4".into()), 60, "runner-a"), "the wave's end is recorded");
    assert_eq!((r.status, r.paused_from, r.position), (Status::Paused, Some(Status::AwaitingApproval), 1));
    r.resume(70, "ops").unwrap();
    assert_eq!(r.status, Status::AwaitingApproval, "resumed where the wave left it: its gate");
    // A runner whose claim lapsed and was taken renews nothing.
    let mut r = Rollout::new("v", waves(&["rest"]), None, 0, "req").unwrap();
    r.claim(0, 10, 70, "runner-a");
    r.claim(0, 80, 140, "runner-b");
    assert!(!r.renew(0, 150, "runner-a"));
    // Paused while soaking, nothing runs and nothing is renewed.
    let mut r = Rollout::new("v", waves(&["t1:soak=60", "rest"]), None, 0, "req").unwrap();
    r.claim(0, 10, 70, "runner-a");
    assert!(r.wave_ended(0, Ok(String::new()), 20, "runner-a"));
    r.pause(30, "ops").unwrap();
    assert!(!r.renew(1, 100, "runner-a"));
    assert!(!r.wave_ended(1, Ok(String::new()), 40, "runner-a"));
}
