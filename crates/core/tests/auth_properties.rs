//! Property tests of the permission decision rule (`auth::decide`) over
//! random rule sets in a small universe of prefixes and names, so overlaps,
//! ties and implications are common: it agrees with a brute-force reading
//! of the rule, the most specific prefix wins, deny beats allow at the same
//! prefix, an unrelated rule changes nothing, allowed verbs are closed under
//! implication, and disabled auth allows everything.

use leasehold_core::auth::{decide, Auth, Decision, Principal, Rule, Verb};
use proptest::prelude::*;
use std::collections::BTreeSet;

const PREFIXES: [&str; 6] = ["", "j", "jobs/", "jobs/a", "db/", "jobs/a/b"];
const NAMES: [&str; 4] = ["jobs/a", "jobs/b", "db/x", "x"];

fn verb() -> impl Strategy<Value = Verb> {
    prop::sample::select(Verb::ALL.to_vec())
}

fn rule() -> impl Strategy<Value = (String, Rule)> {
    let verbs = || prop::collection::btree_set(verb(), 0..3);
    (prop::sample::select(PREFIXES.to_vec()), verbs(), verbs())
        .prop_map(|(prefix, allow, deny)| (prefix.to_owned(), Rule { allow, deny }))
}

fn rules() -> impl Strategy<Value = Vec<(String, Rule)>> {
    prop::collection::vec(rule(), 0..6)
}

fn run(rules: &[(String, Rule)], verb: Verb, name: &str) -> Decision {
    decide(rules.iter().map(|(p, r)| (p.as_str(), r)), verb, name)
}

/// The rule as the brief states it, by brute force.
fn reference(rules: &[(String, Rule)], verb: Verb, name: &str) -> bool {
    let mentions = |rule: &Rule| {
        let allows = rule.allow.iter().any(|a| a.implies(verb));
        let denies = rule.deny.iter().any(|d| verb.implies(*d));
        (allows, denies)
    };
    let matching: Vec<_> = rules
        .iter()
        .filter(|(p, r)| name.starts_with(p.as_str()) && mentions(r) != (false, false))
        .collect();
    let Some(longest) = matching.iter().map(|(p, _)| p.len()).max() else {
        return false;
    };
    let at_longest = matching.iter().filter(|(p, _)| p.len() == longest);
    !at_longest.into_iter().any(|(_, r)| mentions(r).1)
}

proptest! {
    #[test]
    fn decide_agrees_with_the_brute_force_rule(rules in rules(), verb in verb(), name in prop::sample::select(NAMES.to_vec())) {
        let decision = run(&rules, verb, name);
        prop_assert_eq!(decision.is_allowed(), reference(&rules, verb, name));
        // The deciding prefix is the longest matching one that mentions the verb.
        if let Decision::Allowed { prefix } | Decision::DeniedBy { prefix } = &decision {
            prop_assert!(name.starts_with(prefix.as_str()));
            let longer = rules.iter().any(|(p, r)| {
                p.len() > prefix.len() && name.starts_with(p.as_str()) && (r.allows(verb) || r.denies(verb))
            });
            prop_assert!(!longer, "a more specific rule was ignored");
        }
    }

    #[test]
    fn deny_beats_allow_at_the_same_prefix(rules in rules(), verb in verb(), name in prop::sample::select(NAMES.to_vec())) {
        // Allow and deny the verb on the name itself (the longest prefix
        // any rule can have; the random rules on it are dropped): deny wins.
        let mut rules: Vec<_> = rules.into_iter().filter(|(p, _)| p != name).collect();
        let allow = Rule { allow: BTreeSet::from([verb]), deny: BTreeSet::new() };
        let deny = Rule { allow: BTreeSet::new(), deny: BTreeSet::from([verb]) };
        rules.push((name.to_owned(), allow));
        prop_assert!(run(&rules, verb, name).is_allowed());
        rules.push((name.to_owned(), deny));
        prop_assert_eq!(run(&rules, verb, name), Decision::DeniedBy { prefix: name.to_owned() });
    }

    #[test]
    fn an_unrelated_rule_changes_nothing(rules in rules(), extra in rule(), verb in verb(), name in prop::sample::select(NAMES.to_vec())) {
        prop_assume!(!name.starts_with(extra.0.as_str()));
        let before = run(&rules, verb, name);
        let mut more = rules;
        more.push(extra);
        prop_assert_eq!(run(&more, verb, name), before);
    }

    #[test]
    fn allowed_verbs_are_closed_under_implication(rules in rules(), name in prop::sample::select(NAMES.to_vec())) {
        for strong in Verb::ALL {
            for weak in Verb::ALL.into_iter().filter(|w| strong.implies(*w)) {
                if run(&rules, strong, name).is_allowed() {
                    prop_assert!(run(&rules, weak, name).is_allowed(), "{strong} allowed, {weak} not");
                }
            }
        }
    }

    #[test]
    fn disabled_auth_allows_everything(verb in verb(), name in prop::sample::select(NAMES.to_vec()), anonymous in any::<bool>()) {
        let auth = Auth::default();
        let principal = Principal::parse("nobody").unwrap();
        let who = if anonymous { None } else { Some(&principal) };
        prop_assert_eq!(auth.check(who, verb, name), Ok(()));
    }
}
