use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;

use crate::migrate::fleet::*;

fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|name| name.to_string()).collect()
}

fn held(tenants: &[&str], unreachable: bool) -> Option<Vec<Held>> {
    Some(tenants.iter().map(|tenant| Held { tenant: tenant.to_string(), unreachable }).collect())
}

/// Three shards a, b, c with two tenants each, all answering, nothing held.
fn fleet() -> View {
    View {
        names: names(&["a", "b", "c"]),
        listed: vec![Some(names(&["a0", "a1"])), Some(names(&["b0", "b1"])), Some(names(&["c0", "c1"]))],
        directory: Some(Directory::default()),
        held: vec![Some(Vec::new()), Some(Vec::new()), Some(Vec::new())],
    }
}

/// [`fleet`] with shard c down, the directory knowing its tenants.
fn c_down() -> View {
    let mut view = fleet();
    view.listed[2] = None;
    view.held[2] = None;
    view.directory = Some(Directory { rows: vec![("c0".into(), "c".into()), ("c1".into(), "c".into())] });
    view
}

/// Each shard's own page of `first` after `after` from its whole list, as
/// the shell asks each shard for it (`None`: the shard does not answer).
fn pages(whole: &[Option<&[&str]>], after: Option<&str>, first: usize) -> Vec<Option<Vec<String>>> {
    whole
        .iter()
        .map(|listed| {
            listed.map(|tenants| {
                let mut tenants = names(tenants);
                tenants.sort();
                tenants.retain(|tenant| after.is_none_or(|after| tenant.as_str() > after));
                tenants.truncate(first);
                tenants
            })
        })
        .collect()
}

#[test]
fn a_page_of_the_fleet_is_merged_from_each_shards_own_page_in_byte_order() {
    let whole: [Option<&[&str]>; 3] = [Some(&["m", "a", "z"]), Some(&["b", "y", "c", "B"]), Some(&["n"])];
    let mut view = fleet();
    let mut seen = Vec::new();
    let mut after: Option<String> = None;
    loop {
        view.listed = pages(&whole, after.as_deref(), 2);
        let page = view.page(after.as_deref(), 2).unwrap();
        if page.is_empty() {
            break;
        }
        after = page.last().map(|(tenant, _)| tenant.clone());
        seen.extend(page);
    }
    let expected = [("B", 1), ("a", 0), ("b", 1), ("c", 1), ("m", 0), ("n", 2), ("y", 1), ("z", 0)];
    assert_eq!(seen, expected.map(|(tenant, shard)| (tenant.to_string(), shard)));
}

#[test]
fn a_page_stands_in_for_a_shard_down_with_the_directory_and_refuses_a_tenant_on_two() {
    // c is down: c0 and c1 as the directory last saw them, with c's index.
    let mut view = c_down();
    view.listed = pages(&[Some(&["a0", "a1"]), Some(&["b0", "b1"]), None], Some("a1"), 3);
    let page = view.page(Some("a1"), 3).unwrap();
    assert_eq!(page, vec![("b0".to_string(), 1), ("b1".to_string(), 1), ("c0".to_string(), 2)]);
    // A tenant the directory last saw on c that b lists now is b's.
    view.listed = pages(&[Some(&["a0"]), Some(&["b0", "c0"]), None], None, 10);
    let page = view.page(None, 10).unwrap();
    assert_eq!(page.iter().find(|(tenant, _)| tenant == "c0"), Some(&("c0".to_string(), 1)));
    // Listed by two answering shards: refused, as the whole list is.
    view = fleet();
    view.listed = pages(&[Some(&["a0", "x"]), Some(&["b0", "x"]), Some(&["c0"])], None, 10);
    assert!(matches!(view.page(None, 10), Err(FleetError::OnTwoShards { tenant, .. }) if tenant == "x"));
    // Down and unknown to the directory: its tenants cannot be shown.
    let mut view = c_down();
    view.directory = Some(Directory::default());
    view.listed = pages(&[Some(&["a0"]), Some(&["b0"]), None], None, 10);
    assert_eq!(view.page(None, 10), Err(FleetError::Unknown(2)));
}

#[test]
fn a_plain_version_runs_everywhere_and_only_the_home_shard_runs_single_schemas() {
    let parts = parts(&fleet(), Ask::Every).unwrap();
    assert_eq!(
        parts,
        vec![
            Some(Part { tenants_only: false, tenants: None }),
            Some(Part { tenants_only: true, tenants: None }),
            Some(Part { tenants_only: true, tenants: None })
        ]
    );
}

#[test]
fn a_wave_runs_its_tenants_where_they_live_and_the_home_shard_always() {
    let wave = names(&["b1", "c0"]);
    let parts = parts(&fleet(), Ask::Wave(&wave)).unwrap();
    assert_eq!(parts[0], Some(Part { tenants_only: false, tenants: Some(Vec::new()) }));
    assert_eq!(parts[1], Some(Part { tenants_only: true, tenants: Some(names(&["b1"])) }));
    assert_eq!(parts[2], Some(Part { tenants_only: true, tenants: Some(names(&["c0"])) }));
    // A shard down is found by the directory: its part is there, to fail.
    let parts = super::parts(&c_down(), Ask::Wave(&wave)).unwrap();
    assert_eq!(parts[2], Some(Part { tenants_only: true, tenants: Some(names(&["c0"])) }));
}

#[test]
fn a_wave_naming_a_stranger_or_a_quarantined_tenant_is_refused_for_every_shard() {
    let stranger = names(&["a0", "zz"]);
    assert_eq!(parts(&fleet(), Ask::Wave(&stranger)), Err(FleetError::Wave(WaveError::NotATenant("zz".into()))));
    let mut view = fleet();
    view.held[1] = held(&["b1"], false);
    let wave = names(&["a0", "b1"]);
    assert_eq!(parts(&view, Ask::Wave(&wave)), Err(FleetError::Retry(RetryError::Quarantined("b1".into()))));
    // Held on the home shard for a shard that did not answer: the same.
    let mut view = c_down();
    view.held[0] = held(&["c0"], true);
    let wave = names(&["c0"]);
    assert_eq!(parts(&view, Ask::Wave(&wave)), Err(FleetError::Retry(RetryError::Quarantined("c0".into()))));
}

#[test]
fn a_retry_runs_where_the_quarantined_tenants_live() {
    let mut view = fleet();
    view.held[0] = held(&["c1"], true); // put aside while c was down
    view.held[1] = held(&["b0"], false);
    let all = parts(&view, Ask::Retry(&[])).unwrap();
    assert_eq!(
        all,
        vec![None, Some(Part { tenants_only: true, tenants: None }), Some(Part { tenants_only: true, tenants: None })]
    );
    let named = names(&["c1"]);
    let one = parts(&view, Ask::Retry(&named)).unwrap();
    assert_eq!(one, vec![None, None, Some(Part { tenants_only: true, tenants: Some(names(&["c1"])) })]);
    let wrong = names(&["a0"]);
    assert_eq!(parts(&view, Ask::Retry(&wrong)), Err(FleetError::Retry(RetryError::NotQuarantined("a0".into()))));
    assert_eq!(parts(&fleet(), Ask::Retry(&[])), Err(FleetError::Retry(RetryError::NothingQuarantined)));
    // A quarantined tenant no shard lists any more is retried nowhere.
    let mut gone = fleet();
    gone.held[1] = held(&["b9"], false);
    assert_eq!(parts(&gone, Ask::Retry(&[])), Err(FleetError::Retry(RetryError::NothingQuarantined)));
}

#[test]
fn a_new_tenant_needs_every_shard_and_goes_where_asked_or_to_the_fewest() {
    let mut view = fleet();
    view.listed[1] = Some(names(&["b0"]));
    let placed = parts(&view, Ask::NewTenant { tenant: "n", shard: None }).unwrap();
    assert_eq!(placed, vec![None, Some(Part { tenants_only: true, tenants: None }), None]);
    let named = parts(&view, Ask::NewTenant { tenant: "n", shard: Some("c") }).unwrap();
    assert_eq!(named.iter().position(Option::is_some), Some(2));
    assert_eq!(parts(&view, Ask::NewTenant { tenant: "c1", shard: None }), Err(FleetError::TenantExists("c1".into())));
    assert_eq!(parts(&view, Ask::NewTenant { tenant: "C1", shard: None }), Err(FleetError::TenantExists("C1".into())));
    assert_eq!(
        parts(&view, Ask::NewTenant { tenant: "n", shard: Some("z") }),
        Err(FleetError::Shard(ShardError::Unknown("z".into())))
    );
    assert_eq!(parts(&c_down(), Ask::NewTenant { tenant: "n", shard: None }), Err(FleetError::MustAnswer(2)));
}

#[test]
fn many_new_tenants_spread_over_the_fewest_or_all_go_where_asked() {
    let mut view = fleet();
    view.listed[1] = Some(names(&["b0"]));
    // b has one tenant, a and c two: b first, then a, b, c in turn.
    let placed = place_new_tenants(&view, &names(&["n1", "n2", "n3", "n4", "n5"]), None).unwrap();
    assert_eq!(placed, vec![names(&["n2", "n5"]), names(&["n1", "n3"]), names(&["n4"])]);
    let asked = place_new_tenants(&view, &names(&["n1", "n2"]), Some("c")).unwrap();
    assert_eq!(asked, vec![Vec::<String>::new(), Vec::new(), names(&["n1", "n2"])]);
    assert_eq!(place_new_tenants(&view, &names(&["n1", "a1"]), None), Err(FleetError::TenantExists("a1".into())));
    assert_eq!(place_new_tenants(&c_down(), &names(&["n1"]), None), Err(FleetError::MustAnswer(2)));
    assert_eq!(
        place_new_tenants(&view, &names(&["n1"]), Some("z")),
        Err(FleetError::Shard(ShardError::Unknown("z".into())))
    );
}

#[test]
fn a_tenant_on_two_shards_is_refused_by_every_request() {
    let mut view = fleet();
    view.listed[2] = Some(names(&["c0", "b1"]));
    let twice = FleetError::OnTwoShards { tenant: "b1".into(), shards: ["b".into(), "c".into()] };
    assert_eq!(view.seen(), Err(twice.clone()));
    let wave = names(&["a0"]);
    assert_eq!(parts(&view, Ask::Wave(&wave)), Err(twice.clone()));
    assert_eq!(parts(&view, Ask::Retry(&[])), Err(twice.clone()));
    assert_eq!(parts(&view, Ask::NewTenant { tenant: "n", shard: None }), Err(twice));
}

#[test]
fn the_tenant_list_serves_a_shard_that_does_not_answer_as_last_seen() {
    let seen = c_down().seen().unwrap();
    assert_eq!(seen[2], Seen { tenants: names(&["c0", "c1"]), reachable: false });
    assert!(seen[0].reachable && seen[1].reachable);
    // A tenant the directory places on c that b lists now is b's.
    let mut moved = c_down();
    moved.listed[1] = Some(names(&["b0", "b1", "c1"]));
    assert_eq!(moved.seen().unwrap()[2].tenants, names(&["c0"]));
    // Down and never seen: an error, not an empty shard.
    let mut unknown = c_down();
    unknown.directory = Some(Directory::default());
    assert_eq!(unknown.seen(), Err(FleetError::Unknown(2)));
}

#[test]
fn housekeeping_updates_the_directory_and_hands_quarantine_back_to_a_shard_that_answers() {
    let mut view = fleet();
    view.directory = Some(Directory { rows: vec![("c0".into(), "c".into()), ("gone".into(), "b".into())] });
    view.held[0] = held(&["a1", "c0", "c1"], true);
    view.held[2] = held(&["c1"], false); // c holds c1 itself: its row wins
    let work = housekeeping(&view);
    assert_eq!(work.directory.drop, names(&["gone"]));
    assert_eq!(work.directory.put.len(), 5, "{:?}", work.directory);
    assert_eq!(work.hand_overs, vec![HandOver { shard: 2, write: names(&["c0"]), release: names(&["c0", "c1"]) }]);
    // Nothing while the home shard does not answer; nothing for a shard
    // that does not.
    let mut home_down = view.clone();
    home_down.directory = None;
    home_down.listed[0] = None;
    home_down.held[0] = None;
    assert_eq!(housekeeping(&home_down), Housekeeping::default());
    let mut still_down = c_down();
    still_down.held[0] = held(&["c0"], true);
    assert!(housekeeping(&still_down).hand_overs.is_empty());
}

#[test]
fn a_shard_that_does_not_answer_leaves_its_tenants_quarantined_on_the_home_shard() {
    assert_eq!(quarantine_unreachable(&c_down(), 2), names(&["c0", "c1"]));
    assert!(quarantine_unreachable(&c_down(), 0).is_empty(), "the home shard cannot hold its own");
    let mut home_down = c_down();
    home_down.directory = None;
    assert!(quarantine_unreachable(&home_down, 2).is_empty());
}

#[test]
fn the_quarantine_shows_every_held_tenant_once_wherever_its_row_is() {
    // Handed over: c's own row, cause kept (the defect: it was hidden).
    let handed = vec![Some(Vec::new()), Some(Vec::new()), held(&["c0"], true)];
    assert_eq!(visible_quarantine(&handed), vec![(2, 0)]);
    // A hand-over cut short: in both places, shown once (c's).
    let both = vec![held(&["c0", "c1"], true), Some(Vec::new()), held(&["c0"], true)];
    assert_eq!(visible_quarantine(&both), vec![(2, 0), (0, 1)]);
    // While c is down, the home shard's rows; a shard's own, by tenant.
    let down = vec![held(&["c1", "c0"], true), held(&["b0"], false), None];
    assert_eq!(visible_quarantine(&down), vec![(1, 0), (0, 1), (0, 0)]);
}

#[test]
fn one_request_over_several_shards_is_one_version_under_its_lowest_shards_id() {
    let ids = Ids::for_shards(3);
    let part = |shard, local, name, request_id| VersionPart { shard, local, name, created: "t1", request_id };
    let rows = [part(1, 4, "v", "r1"), part(0, 7, "v", "r1"), part(2, 2, "v", "r1"), part(1, 5, "w", "r2")];
    let versions = one_identity(ids, &rows);
    assert_eq!(
        versions,
        vec![
            FleetVersion { id: 70, parts: vec![(0, 70), (1, 41), (2, 22)] },
            FleetVersion { id: 51, parts: vec![(1, 51)] }
        ]
    );
    // The same name and request at another time is another version.
    let again = [part(0, 1, "v", "r"), VersionPart { created: "t2", ..part(1, 1, "v", "r") }];
    assert_eq!(one_identity(ids, &again).len(), 2);
}

// ---- The property: random sequences of shards going down and up,
// versions, waves, retries, releases and new tenants, carried out by a
// model of the shell over the decisions above.

#[derive(Debug, Clone)]
enum Op {
    Down(usize),
    Up(usize),
    Version,
    Wave(Vec<usize>),
    RetryAll,
    Retry(Vec<usize>),
    Release(Vec<usize>),
    NewTenant(Option<usize>),
}

const SHARDS: usize = 3;

fn op() -> impl Strategy<Value = Op> {
    let picks = || proptest::collection::vec(0usize..12, 1..4);
    prop_oneof![
        (0..SHARDS).prop_map(Op::Down),
        (0..SHARDS).prop_map(Op::Up),
        Just(Op::Version),
        picks().prop_map(Op::Wave),
        Just(Op::RetryAll),
        picks().prop_map(Op::Retry),
        picks().prop_map(Op::Release),
        proptest::option::of(0..SHARDS).prop_map(Op::NewTenant),
    ]
}

/// The fleet as the shell and the databases keep it.
struct Model {
    up: [bool; SHARDS],
    /// Where each tenant truly lives.
    home_of: BTreeMap<String, usize>,
    directory: Directory,
    held: [Vec<Held>; SHARDS],
    /// Files applied per tenant (every version brings one more file).
    applied: BTreeMap<String, usize>,
    files: usize,
    /// Tenants a request meant to run and did not, until run or released.
    owed: BTreeSet<String>,
    created: usize,
}

impl Model {
    fn new() -> Model {
        let mut home_of = BTreeMap::new();
        for shard in 0..SHARDS {
            for i in 0..3 {
                home_of.insert(format!("s{shard}t{i}"), shard);
            }
        }
        let applied = home_of.keys().map(|t| (t.clone(), 0)).collect();
        Model {
            up: [true; SHARDS],
            home_of,
            directory: Directory::default(),
            held: Default::default(),
            applied,
            files: 0,
            owed: BTreeSet::new(),
            created: 0,
        }
    }

    fn tenants_of(&self, shard: usize) -> Vec<String> {
        self.home_of.iter().filter(|(_, s)| **s == shard).map(|(t, _)| t.clone()).collect()
    }

    fn view(&self) -> View {
        View {
            names: (0..SHARDS).map(|s| format!("s{s}")).collect(),
            listed: (0..SHARDS).map(|s| self.up[s].then(|| self.tenants_of(s))).collect(),
            directory: self.up[0].then(|| self.directory.clone()),
            held: (0..SHARDS).map(|s| self.up[s].then(|| self.held[s].clone())).collect(),
        }
    }

    /// Any name of the fleet, or one it does not hold.
    fn name(&self, pick: usize) -> String {
        self.home_of.keys().nth(pick).cloned().unwrap_or_else(|| format!("nobody{pick}"))
    }

    fn housekeeping(&mut self, view: &View) {
        let work = housekeeping(view);
        self.directory.rows.retain(|(t, _)| !work.directory.drop.contains(t));
        for (tenant, shard) in work.directory.put {
            self.directory.rows.retain(|(t, _)| *t != tenant);
            self.directory.rows.push((tenant, shard));
        }
        for hand_over in work.hand_overs {
            for tenant in &hand_over.write {
                let row = self.held[0].iter().find(|r| &r.tenant == tenant).unwrap().clone();
                self.held[hand_over.shard].push(row);
            }
            self.held[0].retain(|r| !hand_over.release.contains(&r.tenant));
        }
    }

    /// A request that writes, as the shell carries it out.
    fn request(&mut self, ask: Ask<'_>, new: Option<String>) {
        let view = self.view();
        self.housekeeping(&view);
        let Ok(parts) = parts(&view, ask) else {
            if let Ask::Wave(named) = ask {
                let placement = view.placement();
                let held = quarantined_names(&view);
                let fine = placement.is_ok_and(|p| named.iter().all(|n| p.shard_of(n).is_some()))
                    && named.iter().all(|n| !held.contains(n.as_str()));
                assert!(!fine, "a wave was refused that names tenants and none quarantined");
            }
            return;
        };
        if let Ask::Wave(named) = ask {
            for name in named {
                assert!(self.home_of.contains_key(name), "a wave ran naming {name}, on no shard");
                let seen_held = view.held.iter().flatten().flatten().any(|r| &r.tenant == name);
                assert!(!seen_held, "a wave ran naming quarantined {name}");
            }
        }
        if matches!(ask, Ask::Every | Ask::Wave(_)) {
            self.files += 1;
        }
        let last_seen = view.last_seen();
        for (shard, part) in parts.into_iter().enumerate() {
            let Some(part) = part else { continue };
            let own: Vec<String> = self.held[shard].iter().map(|r| r.tenant.clone()).collect();
            let intended: Vec<String> = match (&ask, &part.tenants) {
                (Ask::NewTenant { .. }, _) => new.clone().into_iter().collect(),
                (_, Some(names)) => names.clone(),
                (Ask::Retry(_), None) => own.clone(),
                (_, None) => last_seen[shard].clone(),
            };
            if !self.up[shard] {
                self.owed.extend(intended.iter().cloned());
                for tenant in quarantine_unreachable(&view, shard) {
                    if !self.held[0].iter().any(|r| r.tenant == tenant) {
                        self.held[0].push(Held { tenant, unreachable: true });
                    }
                }
                continue;
            }
            if let Some(tenant) = &new {
                self.home_of.insert(tenant.clone(), shard);
                self.applied.insert(tenant.clone(), self.files);
                continue;
            }
            let retry = matches!(ask, Ask::Retry(_));
            for tenant in intended {
                let quarantined = own.contains(&tenant);
                if retry && !quarantined {
                    continue; // the store's own check: not there, not run
                }
                if !retry && quarantined {
                    self.owed.insert(tenant); // skipped
                    continue;
                }
                self.applied.insert(tenant.clone(), self.files);
                self.owed.remove(&tenant);
                self.held[shard].retain(|r| r.tenant != tenant);
            }
        }
    }

    fn release(&mut self, names: &[String]) {
        for shard in (0..SHARDS).filter(|s| self.up[*s]) {
            let released: Vec<String> =
                self.held[shard].iter().filter(|r| names.contains(&r.tenant)).map(|r| r.tenant.clone()).collect();
            self.held[shard].retain(|r| !released.contains(&r.tenant));
            for tenant in released {
                self.owed.remove(&tenant);
            }
        }
    }

    fn apply(&mut self, op: &Op) {
        match op {
            Op::Down(shard) => self.up[*shard] = false,
            Op::Up(shard) => self.up[*shard] = true,
            Op::Version => self.request(Ask::Every, None),
            Op::Wave(picks) => {
                let named: Vec<String> =
                    picks.iter().map(|p| self.name(*p)).collect::<BTreeSet<_>>().into_iter().collect();
                self.request(Ask::Wave(&named), None);
            }
            Op::RetryAll => self.request(Ask::Retry(&[]), None),
            Op::Retry(picks) => {
                let named: Vec<String> =
                    picks.iter().map(|p| self.name(*p)).collect::<BTreeSet<_>>().into_iter().collect();
                self.request(Ask::Retry(&named), None);
            }
            Op::Release(picks) => {
                let named: Vec<String> = picks.iter().map(|p| self.name(*p)).collect();
                self.release(&named);
            }
            Op::NewTenant(shard) => {
                self.created += 1;
                let tenant = format!("new{}", self.created);
                let shard = shard.map(|s| format!("s{s}"));
                self.request(Ask::NewTenant { tenant: &tenant, shard: shard.as_deref() }, Some(tenant.clone()));
            }
        }
    }

    /// The invariants, as the operator sees the fleet now.
    fn check(&self) {
        let view = self.view();
        if !self.up[0] {
            return; // the tenant list and the quarantine answer an error
        }
        // Every tenant on exactly one shard, as the tenant list shows it.
        let seen = match view.seen() {
            Ok(seen) => seen,
            // A shard down before any version saw it: the list says so.
            Err(FleetError::Unknown(shard)) => return assert!(!self.up[shard]),
            Err(error) => panic!("{error}"),
        };
        let mut listed: Vec<&String> = seen.iter().flat_map(|s| &s.tenants).collect();
        let count = listed.len();
        listed.sort();
        listed.dedup();
        assert_eq!(listed.len(), count, "a tenant listed twice: {seen:?}");
        for (tenant, shard) in &self.home_of {
            let known = self.directory.rows.iter().any(|(t, _)| t == tenant) || self.up[*shard];
            if known {
                assert!(seen[*shard].tenants.contains(tenant), "{tenant} not listed on its shard {shard}: {seen:?}");
            }
        }
        // No tenant skipped unless the quarantine or the tenant list shows it.
        let shown: BTreeSet<&str> = visible_quarantine(&view.held)
            .into_iter()
            .map(|(shard, row)| view.held[shard].as_ref().unwrap()[row].tenant.as_str())
            .collect();
        let mut rows: Vec<&str> = visible_quarantine(&view.held)
            .into_iter()
            .map(|(s, r)| view.held[s].as_ref().unwrap()[r].tenant.as_str())
            .collect();
        let all = rows.len();
        rows.dedup();
        assert_eq!(rows.len(), all, "a tenant shown twice in the quarantine");
        for tenant in &self.owed {
            let shard = self.home_of[tenant];
            let unreachable_shown = !seen[shard].reachable;
            assert!(
                shown.contains(tenant.as_str()) || unreachable_shown,
                "{tenant} was skipped and nothing shows it (shard {shard} up: {}): held {:?}",
                self.up[shard],
                self.held
            );
        }
        // Recorded = applied, as far as the model holds it: nobody ahead.
        assert!(self.applied.values().all(|files| *files <= self.files));
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]
    #[test]
    fn no_tenant_is_skipped_unless_the_operator_sees_it(ops in proptest::collection::vec(op(), 1..40)) {
        let mut model = Model::new();
        for op in &ops {
            model.apply(op);
            model.check();
        }
    }
}
