var __defProp = Object.defineProperty;
var __name = (target, value) => __defProp(target, "name", { value, configurable: true });

// ../../pkg/webhooks/dist/workerd.mjs
import Xe from "./dbbb88f5c70bccebd144b7b9e371ce2ad8739c81-strata.wasm";
function L(e = {}) {
  return typeof e.debug != "function" && (e.debug = () => {
  }), typeof e.info != "function" && (e.info = () => {
  }), typeof e.warn != "function" && (e.warn = console.warn.bind(console)), typeof e.error != "function" && (e.error = console.error.bind(console)), e;
}
__name(L, "L");
var oe = Object.freeze(["branch_protection_configuration", "branch_protection_configuration.disabled", "branch_protection_configuration.enabled", "branch_protection_rule", "branch_protection_rule.created", "branch_protection_rule.deleted", "branch_protection_rule.edited", "check_run", "check_run.completed", "check_run.created", "check_run.requested_action", "check_run.rerequested", "check_suite", "check_suite.completed", "check_suite.requested", "check_suite.rerequested", "code_scanning_alert", "code_scanning_alert.appeared_in_branch", "code_scanning_alert.closed_by_user", "code_scanning_alert.created", "code_scanning_alert.fixed", "code_scanning_alert.reopened", "code_scanning_alert.reopened_by_user", "commit_comment", "commit_comment.created", "create", "custom_property", "custom_property.created", "custom_property.deleted", "custom_property.promote_to_enterprise", "custom_property.updated", "custom_property_values", "custom_property_values.updated", "delete", "dependabot_alert", "dependabot_alert.auto_dismissed", "dependabot_alert.auto_reopened", "dependabot_alert.created", "dependabot_alert.dismissed", "dependabot_alert.fixed", "dependabot_alert.reintroduced", "dependabot_alert.reopened", "deploy_key", "deploy_key.created", "deploy_key.deleted", "deployment", "deployment.created", "deployment_protection_rule", "deployment_protection_rule.requested", "deployment_review", "deployment_review.approved", "deployment_review.rejected", "deployment_review.requested", "deployment_status", "deployment_status.created", "discussion", "discussion.answered", "discussion.category_changed", "discussion.closed", "discussion.created", "discussion.deleted", "discussion.edited", "discussion.labeled", "discussion.locked", "discussion.pinned", "discussion.reopened", "discussion.transferred", "discussion.unanswered", "discussion.unlabeled", "discussion.unlocked", "discussion.unpinned", "discussion_comment", "discussion_comment.created", "discussion_comment.deleted", "discussion_comment.edited", "fork", "github_app_authorization", "github_app_authorization.revoked", "gollum", "installation", "installation.created", "installation.deleted", "installation.new_permissions_accepted", "installation.suspend", "installation.unsuspend", "installation_repositories", "installation_repositories.added", "installation_repositories.removed", "installation_target", "installation_target.renamed", "issue_comment", "issue_comment.created", "issue_comment.deleted", "issue_comment.edited", "issues", "issues.assigned", "issues.closed", "issues.deleted", "issues.demilestoned", "issues.edited", "issues.labeled", "issues.locked", "issues.milestoned", "issues.opened", "issues.pinned", "issues.reopened", "issues.transferred", "issues.typed", "issues.unassigned", "issues.unlabeled", "issues.unlocked", "issues.unpinned", "issues.untyped", "label", "label.created", "label.deleted", "label.edited", "marketplace_purchase", "marketplace_purchase.cancelled", "marketplace_purchase.changed", "marketplace_purchase.pending_change", "marketplace_purchase.pending_change_cancelled", "marketplace_purchase.purchased", "member", "member.added", "member.edited", "member.removed", "membership", "membership.added", "membership.removed", "merge_group", "merge_group.checks_requested", "merge_group.destroyed", "meta", "meta.deleted", "milestone", "milestone.closed", "milestone.created", "milestone.deleted", "milestone.edited", "milestone.opened", "org_block", "org_block.blocked", "org_block.unblocked", "organization", "organization.deleted", "organization.member_added", "organization.member_invited", "organization.member_removed", "organization.renamed", "package", "package.published", "package.updated", "page_build", "personal_access_token_request", "personal_access_token_request.approved", "personal_access_token_request.cancelled", "personal_access_token_request.created", "personal_access_token_request.denied", "ping", "project", "project.closed", "project.created", "project.deleted", "project.edited", "project.reopened", "project_card", "project_card.converted", "project_card.created", "project_card.deleted", "project_card.edited", "project_card.moved", "project_column", "project_column.created", "project_column.deleted", "project_column.edited", "project_column.moved", "projects_v2", "projects_v2.closed", "projects_v2.created", "projects_v2.deleted", "projects_v2.edited", "projects_v2.reopened", "projects_v2_item", "projects_v2_item.archived", "projects_v2_item.converted", "projects_v2_item.created", "projects_v2_item.deleted", "projects_v2_item.edited", "projects_v2_item.reordered", "projects_v2_item.restored", "projects_v2_status_update", "projects_v2_status_update.created", "projects_v2_status_update.deleted", "projects_v2_status_update.edited", "public", "pull_request", "pull_request.assigned", "pull_request.auto_merge_disabled", "pull_request.auto_merge_enabled", "pull_request.closed", "pull_request.converted_to_draft", "pull_request.demilestoned", "pull_request.dequeued", "pull_request.edited", "pull_request.enqueued", "pull_request.labeled", "pull_request.locked", "pull_request.milestoned", "pull_request.opened", "pull_request.ready_for_review", "pull_request.reopened", "pull_request.review_request_removed", "pull_request.review_requested", "pull_request.synchronize", "pull_request.unassigned", "pull_request.unlabeled", "pull_request.unlocked", "pull_request_review", "pull_request_review.dismissed", "pull_request_review.edited", "pull_request_review.submitted", "pull_request_review_comment", "pull_request_review_comment.created", "pull_request_review_comment.deleted", "pull_request_review_comment.edited", "pull_request_review_thread", "pull_request_review_thread.resolved", "pull_request_review_thread.unresolved", "push", "registry_package", "registry_package.published", "registry_package.updated", "release", "release.created", "release.deleted", "release.edited", "release.prereleased", "release.published", "release.released", "release.unpublished", "repository", "repository.archived", "repository.created", "repository.deleted", "repository.edited", "repository.privatized", "repository.publicized", "repository.renamed", "repository.transferred", "repository.unarchived", "repository_advisory", "repository_advisory.published", "repository_advisory.reported", "repository_dispatch", "repository_dispatch.sample", "repository_import", "repository_ruleset", "repository_ruleset.created", "repository_ruleset.deleted", "repository_ruleset.edited", "repository_vulnerability_alert", "repository_vulnerability_alert.create", "repository_vulnerability_alert.dismiss", "repository_vulnerability_alert.reopen", "repository_vulnerability_alert.resolve", "secret_scanning_alert", "secret_scanning_alert.created", "secret_scanning_alert.publicly_leaked", "secret_scanning_alert.reopened", "secret_scanning_alert.resolved", "secret_scanning_alert.validated", "secret_scanning_alert_location", "secret_scanning_alert_location.created", "secret_scanning_scan", "secret_scanning_scan.completed", "security_advisory", "security_advisory.published", "security_advisory.updated", "security_advisory.withdrawn", "security_and_analysis", "sponsorship", "sponsorship.cancelled", "sponsorship.created", "sponsorship.edited", "sponsorship.pending_cancellation", "sponsorship.pending_tier_change", "sponsorship.tier_changed", "star", "star.created", "star.deleted", "status", "sub_issues", "sub_issues.parent_issue_added", "sub_issues.parent_issue_removed", "sub_issues.sub_issue_added", "sub_issues.sub_issue_removed", "team", "team.added_to_repository", "team.created", "team.deleted", "team.edited", "team.removed_from_repository", "team_add", "watch", "watch.started", "workflow_dispatch", "workflow_job", "workflow_job.completed", "workflow_job.in_progress", "workflow_job.queued", "workflow_job.waiting", "workflow_run", "workflow_run.completed", "workflow_run.in_progress", "workflow_run.requested"]);
function K() {
  Ce++, F = null, typeof P < "u" && (P = 0), typeof _ < "u" && (_ = 0), be = false, X = new WebAssembly.Instance(he, we()), n = X.exports, n.__wbindgen_start();
}
__name(K, "K");
function se() {
  let e, t;
  try {
    let r;
    return m(), r = n.strata_take_panic(), e = r[0], t = r[1], j(r[0], r[1]);
  } finally {
    m(), n.__wbindgen_free(e, t, 1);
  }
}
__name(se, "se");
function ie(e) {
  let t = f(e, n.__wbindgen_malloc, n.__wbindgen_realloc), r = _;
  m(), n.strata_test_panic(t, r);
}
__name(ie, "ie");
function ae(e, t) {
  let r, o, s, a;
  try {
    r = H(e, n.__wbindgen_malloc), o = _, s = f(t, n.__wbindgen_malloc, n.__wbindgen_realloc), a = _;
  } catch (c) {
    throw s && n.__wbindgen_free(s, a * 1, 1), r && n.__wbindgen_free(r, o * 1, 1), c;
  }
  let i;
  return m(), i = n.webhooks_digest_matches(r, o, s, a), i !== 0;
}
__name(ae, "ae");
function ce(e) {
  let t, r;
  try {
    let a = H(e, n.__wbindgen_malloc), i = _, c;
    m(), c = n.webhooks_format_digest(a, i);
    var o = c[0], s = c[1];
    if (c[3]) throw o = 0, s = 0, ye(c[2]);
    return t = o, r = s, j(o, s);
  } finally {
    m(), n.__wbindgen_free(t, r, 1);
  }
}
__name(ce, "ce");
function de(e, t) {
  let r, o;
  try {
    let s, a, i, c;
    try {
      s = f(e, n.__wbindgen_malloc, n.__wbindgen_realloc), a = _, i = S(t) ? 0 : f(t, n.__wbindgen_malloc, n.__wbindgen_realloc), c = _;
    } catch (l) {
      throw i && n.__wbindgen_free(i, c * 1, 1), s && n.__wbindgen_free(s, a * 1, 1), l;
    }
    let d;
    return m(), d = n.webhooks_listener_keys(s, a, i, c), r = d[0], o = d[1], j(d[0], d[1]);
  } finally {
    m(), n.__wbindgen_free(r, o, 1);
  }
}
__name(de, "de");
function le(e) {
  let t, r;
  try {
    let o = f(e, n.__wbindgen_malloc, n.__wbindgen_realloc), s = _, a;
    return m(), a = n.webhooks_normalize_trailing_slashes(o, s), t = a[0], r = a[1], j(a[0], a[1]);
  } finally {
    m(), n.__wbindgen_free(t, r, 1);
  }
}
__name(le, "le");
function _e(e, t, r, o, s) {
  let a, i;
  try {
    let c = +(S(t) ? 16777215 : t), d = +s, l, u, w, p, g, b;
    try {
      l = f(e, n.__wbindgen_malloc, n.__wbindgen_realloc), u = _, w = f(r, n.__wbindgen_malloc, n.__wbindgen_realloc), p = _, g = f(o, n.__wbindgen_malloc, n.__wbindgen_realloc), b = _;
    } catch (x) {
      throw g && n.__wbindgen_free(g, b * 1, 1), w && n.__wbindgen_free(w, p * 1, 1), l && n.__wbindgen_free(l, u * 1, 1), x;
    }
    let y;
    return m(), y = n.webhooks_reply(l, u, c, w, p, g, b, d), a = y[0], i = y[1], j(y[0], y[1]);
  } finally {
    m(), n.__wbindgen_free(a, i, 1);
  }
}
__name(_e, "_e");
function ue(e, t, r, o, s, a, i, c, d, l) {
  let u, w;
  try {
    let p = +(S(c) ? 0 : c), g = +l, b, y, x, A, E, q, T, z, R, v, k, O, M, W, C, J;
    try {
      b = f(e, n.__wbindgen_malloc, n.__wbindgen_realloc), y = _, x = f(t, n.__wbindgen_malloc, n.__wbindgen_realloc), A = _, E = S(r) ? 0 : f(r, n.__wbindgen_malloc, n.__wbindgen_realloc), q = _, T = S(o) ? 0 : f(o, n.__wbindgen_malloc, n.__wbindgen_realloc), z = _, R = S(s) ? 0 : f(s, n.__wbindgen_malloc, n.__wbindgen_realloc), v = _, k = S(a) ? 0 : f(a, n.__wbindgen_malloc, n.__wbindgen_realloc), O = _, M = S(i) ? 0 : f(i, n.__wbindgen_malloc, n.__wbindgen_realloc), W = _, C = f(d, n.__wbindgen_malloc, n.__wbindgen_realloc), J = _;
    } catch (Be) {
      throw C && n.__wbindgen_free(C, J * 1, 1), M && n.__wbindgen_free(M, W * 1, 1), k && n.__wbindgen_free(k, O * 1, 1), R && n.__wbindgen_free(R, v * 1, 1), T && n.__wbindgen_free(T, z * 1, 1), E && n.__wbindgen_free(E, q * 1, 1), x && n.__wbindgen_free(x, A * 1, 1), b && n.__wbindgen_free(b, y * 1, 1), Be;
    }
    let I;
    return m(), I = n.webhooks_route(b, y, x, A, E, q, T, z, R, v, k, O, M, W, !S(c), p, C, J, g), u = I[0], w = I[1], j(I[0], I[1]);
  } finally {
    m(), n.__wbindgen_free(u, w, 1);
  }
}
__name(ue, "ue");
function fe(e, t) {
  let r, o;
  try {
    let s, a, i, c;
    try {
      s = f(e, n.__wbindgen_malloc, n.__wbindgen_realloc), a = _, i = H(t, n.__wbindgen_malloc), c = _;
    } catch (l) {
      throw i && n.__wbindgen_free(i, c * 1, 1), s && n.__wbindgen_free(s, a * 1, 1), l;
    }
    let d;
    return m(), d = n.webhooks_sign(s, a, i, c), r = d[0], o = d[1], j(d[0], d[1]);
  } finally {
    m(), n.__wbindgen_free(r, o, 1);
  }
}
__name(fe, "fe");
function pe(e) {
  let t, r;
  try {
    let o = f(e, n.__wbindgen_malloc, n.__wbindgen_realloc), s = _, a;
    return m(), a = n.webhooks_validate_event_name(o, s), t = a[0], r = a[1], j(a[0], a[1]);
  } finally {
    m(), n.__wbindgen_free(t, r, 1);
  }
}
__name(pe, "pe");
function ge(e, t, r) {
  let o, s, a, i, c, d;
  try {
    o = f(e, n.__wbindgen_malloc, n.__wbindgen_realloc), s = _, a = H(t, n.__wbindgen_malloc), i = _, c = f(r, n.__wbindgen_malloc, n.__wbindgen_realloc), d = _;
  } catch (u) {
    throw c && n.__wbindgen_free(c, d * 1, 1), a && n.__wbindgen_free(a, i * 1, 1), o && n.__wbindgen_free(o, s * 1, 1), u;
  }
  let l;
  return m(), l = n.webhooks_verify(o, s, a, i, c, d), l !== 0;
}
__name(ge, "ge");
function me(e, t, r, o) {
  let s, a, i, c, d, l, u, w;
  try {
    s = f(e, n.__wbindgen_malloc, n.__wbindgen_realloc), a = _, i = H(t, n.__wbindgen_malloc), c = _, d = f(r, n.__wbindgen_malloc, n.__wbindgen_realloc), l = _, u = f(o, n.__wbindgen_malloc, n.__wbindgen_realloc), w = _;
  } catch (g) {
    throw u && n.__wbindgen_free(u, w * 1, 1), d && n.__wbindgen_free(d, l * 1, 1), i && n.__wbindgen_free(i, c * 1, 1), s && n.__wbindgen_free(s, a * 1, 1), g;
  }
  let p;
  if (m(), p = n.webhooks_verify_with_fallback(s, a, i, c, d, l, u, w), p[2]) throw ye(p[1]);
  return p[0] !== 0;
}
__name(me, "me");
function we() {
  return { __proto__: null, "./strata_wasm_bg.js": { __proto__: null, __wbg_Error_208446807d0d1e30: /* @__PURE__ */ __name(function(t, r) {
    return Error(j(t, r));
  }, "__wbg_Error_208446807d0d1e30"), __wbindgen_init_externref_table: /* @__PURE__ */ __name(function() {
    let t = n.__wbindgen_externrefs;
    t.set(0, void 0), t.set(1024, void 0), t.set(1025, null), t.set(1026, true), t.set(1027, false);
  }, "__wbindgen_init_externref_table") } };
}
__name(we, "we");
function m() {
  if (be) {
    K();
    return;
  }
}
__name(m, "m");
var Ce = 0;
function j(e, t) {
  return e = e >>> 0, Ve(N().subarray(e, e + t));
}
__name(j, "j");
var F = null;
function N() {
  return (F === null || F.byteLength === 0) && (F = new Uint8Array(n.memory.buffer)), F;
}
__name(N, "N");
function S(e) {
  return e == null;
}
__name(S, "S");
function H(e, t) {
  let r = t(e.length * 1, 1) >>> 0;
  return N().set(e, r / 1), _ = e.length, r;
}
__name(H, "H");
function f(e, t, r) {
  if (r === void 0) {
    let c = U.encode(e), d = t(c.length, 1) >>> 0;
    return N().subarray(d, d + c.length).set(c), _ = c.length, d;
  }
  let o = e.length, s = t(o, 1) >>> 0, a = N(), i = 0;
  for (; i < o; i++) {
    let c = e.charCodeAt(i);
    if (c > 127) break;
    a[s + i] = c;
  }
  if (i !== o) {
    i !== 0 && (e = e.slice(i)), s = r(s, o, o = i + e.length * 3, 1) >>> 0;
    let c = N().subarray(s + i, s + o), d = U.encodeInto(e, c);
    i += d.written, s = r(s, o, i, 1) >>> 0;
  }
  return _ = i, s;
}
__name(f, "f");
var be = false;
function ye(e) {
  let t = n.__wbindgen_externrefs.get(e);
  return n.__externref_table_dealloc(e), t;
}
__name(ye, "ye");
var D = new TextDecoder("utf-8", { ignoreBOM: true });
D.decode();
var De = 2146435072;
var P = 0;
function Ve(e) {
  return P += e.length, P >= De && (D = new TextDecoder("utf-8", { ignoreBOM: true }), D.decode(), P = e.length), D.decode(e);
}
__name(Ve, "Ve");
var U = new TextEncoder();
"encodeInto" in U || (U.encodeInto = function(e, t) {
  let r = U.encode(e);
  return t.set(r), { read: e.length, written: r.length };
});
var _ = 0;
var he;
var X;
var n;
function Je(e, t) {
  return X = e, n = e.exports, he = t, F = null, n.__wbindgen_start(), n;
}
__name(Je, "Je");
function ve(e) {
  if (n !== void 0) return n;
  e !== void 0 && (Object.getPrototypeOf(e) === Object.prototype ? { module: e } = e : console.warn("using deprecated parameters for `initSync()`; pass a single object instead"));
  let t = we();
  e instanceof WebAssembly.Module || (e = new WebAssembly.Module(e));
  let r = new WebAssembly.Instance(e, t);
  return Je(r, e);
}
__name(ve, "ve");
var ke = Xe;
function xe(e, { takePanic: t, resetState: r, onReset: o = /* @__PURE__ */ __name(() => {
}, "o") }) {
  let s = {};
  for (let [a, i] of Object.entries(e)) s[a] = function(c, d, l, u, w, p, g, b, y, x) {
    try {
      return i(c, d, l, u, w, p, g, b, y, x);
    } catch (A) {
      if (!(A instanceof WebAssembly.RuntimeError)) throw A;
      let E = "";
      try {
        E = t();
      } catch {
      }
      throw r(), o(), new Error(`[strata] internal error in ${a}: ${E || A.message} (the WebAssembly instance was replaced)`);
    }
  };
  return s;
}
__name(xe, "xe");
function Ee(e) {
  let t = new Uint8Array(e.length);
  for (let r = 0; r < e.length; r++) t[r] = e.charCodeAt(r) - 256;
  return t;
}
__name(Ee, "Ee");
function Ae({ glue: e, text: t, bindings: r }) {
  let o = [], s = xe(r, { takePanic: e.strata_take_panic, resetState: e.__wbg_reset_state, onReset: /* @__PURE__ */ __name(() => o.forEach((i) => i()), "onReset") }), a = false;
  return { wasm() {
    return a || (e.initSync({ module: typeof t == "string" ? Ee(t) : t }), a = true), s;
  }, onInstanceReset(i) {
    o.push(i);
  } };
}
__name(Ae, "Ae");
var { wasm: h } = Ae({ glue: { initSync: ve, __wbg_reset_state: K, strata_take_panic: se }, text: ke, bindings: { webhooks_digest_matches: ae, webhooks_format_digest: ce, webhooks_listener_keys: de, webhooks_normalize_trailing_slashes: le, webhooks_reply: _e, webhooks_route: ue, webhooks_sign: fe, webhooks_validate_event_name: pe, webhooks_verify: ge, webhooks_verify_with_fallback: me, strata_test_panic: ie } });
function Y(e, t = {}) {
  if (typeof e != "string") throw new TypeError("eventName must be of type string");
  let r = h().webhooks_validate_event_name(e);
  if (r === "") return;
  let o = r.indexOf(":"), s = r.slice(0, o), a = r.slice(o + 1);
  if (s !== "unknown") throw new TypeError(a);
  if (t.onUnknownEventName !== "ignore") {
    if (t.onUnknownEventName === "warn") {
      (t.log || console).warn(a);
      return;
    }
    throw new TypeError(a);
  }
}
__name(Y, "Y");
function Ye(e) {
  return "s" + e.length + ":" + e;
}
__name(Ye, "Ye");
function Se(e) {
  let t = "l" + e.length + ":";
  for (let r of e) t += Ye(String(r));
  return t;
}
__name(Se, "Se");
function G(e, t = 0) {
  let r = { position: t, string() {
    let o = e.indexOf(":", r.position), s = Number(e.slice(r.position + 1, o));
    return r.position = o + 1 + s, e.slice(o + 1, r.position);
  }, strings() {
    let o = e.indexOf(":", r.position), s = Number(e.slice(r.position + 1, o));
    r.position = o + 1;
    let a = [];
    for (let i = 0; i < s; i++) a.push(r.string());
    return a;
  } };
  return r;
}
__name(G, "G");
function je(e) {
  return G(e).strings();
}
__name(je, "je");
var V = /* @__PURE__ */ new Map();
var Ge = 4096;
function Qe(e, t) {
  let r = t ? e + "\0" + t : e, o = V.get(r);
  return o === void 0 && (V.size >= Ge && V.clear(), o = je(h().webhooks_listener_keys(String(e), t ? String(t) : void 0)), V.set(r, o)), o;
}
__name(Qe, "Qe");
function Q(e, t, r) {
  e.hooks[t] || (e.hooks[t] = []), e.hooks[t].push(r);
}
__name(Q, "Q");
function Oe(e, t, r) {
  if (Array.isArray(t)) {
    for (let o of t) Oe(e, o, r);
    return;
  }
  Y(t, { onUnknownEventName: "warn", log: e.log }), Q(e, t, r);
}
__name(Oe, "Oe");
function Ze(e, t) {
  Q(e, "*", t);
}
__name(Ze, "Ze");
function et(e, t) {
  Q(e, "error", t);
}
__name(et, "et");
function Me(e, t, r) {
  if (Array.isArray(t)) {
    for (let a of t) Me(e, a, r);
    return;
  }
  let o = e.hooks[t];
  if (!o) return;
  let s = o.lastIndexOf(r);
  s !== -1 && o.splice(s, 1);
}
__name(Me, "Me");
function Te(e) {
  console.log('FATAL: Error occurred in "error" event handler'), console.log(e);
}
__name(Te, "Te");
function qe(e, t) {
  let r;
  try {
    r = e(t);
  } catch (o) {
    Te(o);
  }
  r && r.catch && r.catch(Te);
}
__name(qe, "qe");
function Re() {
  let e = new Error("Event name not passed");
  return new AggregateError([e], e.message);
}
__name(Re, "Re");
function tt(e, t) {
  let r = e.hooks.error || [];
  if (t instanceof Error) {
    let c = Object.assign(new AggregateError([t], t.message), { event: t });
    return r.forEach((d) => qe(d, c)), Promise.reject(c);
  }
  if (!t || !t.name || !t.payload) throw Re();
  let o = "action" in t.payload ? t.payload.action : null, s = [];
  for (let c of Qe(t.name, o)) {
    let d = e.hooks[c];
    if (d) for (let l of d) s.push(l);
  }
  if (s.length === 0) return Promise.resolve();
  let a = [], i = s.map((c) => {
    let d = Promise.resolve(t);
    return e.transform && (d = d.then(e.transform)), d.then((l) => c(l)).catch((l) => a.push(Object.assign(l, { event: t })));
  });
  return Promise.all(i).then(() => {
    if (a.length === 0) return;
    let c = new AggregateError(a, a.map((d) => d.message).join(`
`));
    throw Object.assign(c, { event: t }), r.forEach((d) => qe(d, c)), c;
  });
}
__name(tt, "tt");
function Z(e) {
  let t = { hooks: {}, log: L(e && e.log) };
  return e && e.transform && (t.transform = e.transform), { on: /* @__PURE__ */ __name((r, o) => Oe(t, r, o), "on"), onAny: /* @__PURE__ */ __name((r) => Ze(t, r), "onAny"), onError: /* @__PURE__ */ __name((r) => et(t, r), "onError"), removeListener: /* @__PURE__ */ __name((r, o) => Me(t, r, o), "removeListener"), receive: /* @__PURE__ */ __name((r) => tt(t, r), "receive") };
}
__name(Z, "Z");
var ee = new TextEncoder();
function We({ wasm: e, tag: t, nativeHmac: r }) {
  function o(d, l, u) {
    if (!d || !l || !u) throw new TypeError(`${t} secret, eventPayload & signature required`);
    if (typeof l != "string") throw new TypeError(`${t} eventPayload must be a string`);
  }
  __name(o, "o");
  function s(d, l, u) {
    return r ? e().webhooks_digest_matches(r(String(d), l), String(u)) : e().webhooks_verify(String(d), ee.encode(l), String(u));
  }
  __name(s, "s");
  async function a(d, l) {
    if (!d || !l) throw new TypeError(`${t} secret & payload required for sign()`);
    if (typeof l != "string") throw new TypeError(`${t} payload must be a string`);
    return r ? e().webhooks_format_digest(r(String(d), l)) : e().webhooks_sign(String(d), ee.encode(l));
  }
  __name(a, "a");
  async function i(d, l, u) {
    return o(d, l, u), s(d, l, u);
  }
  __name(i, "i");
  async function c(d, l, u, w) {
    o(d, l, u);
    let p = w === void 0 ? [] : Array.from(w);
    if (p.every((b) => b && typeof b == "string") && !r) return e().webhooks_verify_with_fallback(String(d), ee.encode(l), String(u), Se(p));
    if (s(d, l, u)) return true;
    for (let b of p) if (await i(b, l, u)) return true;
    return false;
  }
  __name(c, "c");
  return { sign: a, verify: i, verifyWithFallback: c };
}
__name(We, "We");
var rt = "[@strata/webhooks-methods]";
var te = We({ wasm: h, tag: rt });
var Le = /* @__PURE__ */ __name((e, t) => te.sign(e, t), "Le");
var Fe = /* @__PURE__ */ __name((e, t, r) => te.verify(e, t, r), "Fe");
var ze = /* @__PURE__ */ __name((e, t, r, o) => te.verifyWithFallback(e, t, r, o), "ze");
async function Ie(e, t) {
  if (!await ze(e.secret, t.payload, t.signature, e.additionalSecrets).catch(() => false)) {
    let s = new Error("[@strata/webhooks] signature does not match event payload and secret");
    return s.event = t, s.status = 400, e.eventHandler.receive(s);
  }
  let o;
  try {
    o = JSON.parse(t.payload);
  } catch (s) {
    throw s.message = "Invalid JSON", s.status = 400, new AggregateError([s], s.message);
  }
  return e.eventHandler.receive({ id: t.id, name: t.name, payload: o });
}
__name(Ie, "Ie");
var nt = "/api/github/webhooks";
var ot = 9e3;
var st = 25 * 1024 * 1024;
var B = class extends Error {
  static {
    __name(this, "B");
  }
};
function it(e) {
  return h().webhooks_normalize_trailing_slashes(String(e));
}
__name(it, "it");
function $(e) {
  let t = e.indexOf(":"), r = Number(e.slice(1, t)), o = G(e, t + 1), s = o.string(), a = o.strings(), i = {};
  for (let c = 0; c < a.length; c += 2) i[a[c]] = a[c + 1];
  return { status: r, body: s, headers: i };
}
__name($, "$");
var re;
function Ne() {
  return re || (re = { delivered: $(h().webhooks_reply("delivered", void 0, "", "", 0)), stillProcessing: $(h().webhooks_reply("still_processing", void 0, "", "", 0)) }), re;
}
__name(Ne, "Ne");
function at(e) {
  return e == null ? void 0 : String(e);
}
__name(at, "at");
function Pe(e) {
  let t = 0;
  for (let s of e) t += s.length;
  let r = new Uint8Array(t), o = 0;
  for (let s of e) r.set(s, o), o += s.length;
  return r;
}
__name(Pe, "Pe");
var ne = new TextDecoder("utf-8", { fatal: false });
async function lt(e, t) {
  if (!e.body || t === 1 / 0) return e.text();
  let r = e.body.getReader(), o = [], s = 0;
  for (; ; ) {
    let { done: a, value: i } = await r.read();
    if (a) break;
    if (s += i.length, s > t) throw await r.cancel().catch(() => {
    }), new B("payload too large");
    o.push(i);
  }
  return ne.decode(Pe(o));
}
__name(lt, "lt");
function _t(e) {
  return (e && e.errors ? Array.from(e.errors) : [e])[0] || e;
}
__name(_t, "_t");
function Ue({ platform: e, webhooks: t, options: r }) {
  let o = r.path === void 0 ? nt : r.path, s = r.log || L(), a = r.timeout === void 0 ? ot : r.timeout, i = r.maxPayloadBytes === void 0 ? st : r.maxPayloadBytes;
  return async function(d, l, u) {
    let w = e.url(d), p;
    try {
      p = new URL(it(w), "http://localhost").pathname;
    } catch {
      p = void 0;
    }
    let g = /* @__PURE__ */ __name((v) => at(e.header(d, v)), "g"), b = g("content-length"), y = h().webhooks_route(String(d.method), String(w), p, g("content-type"), g("x-github-event"), g("x-hub-signature-256"), g("x-github-delivery"), b !== void 0 && /^\d+$/.test(b) ? Number(b) : void 0, String(o), i === 1 / 0 ? Number.MAX_SAFE_INTEGER : i);
    if (y === "n") return typeof u == "function" && u(), e.notOurs(l);
    if (y !== "d") return e.respond($(y), l);
    let x = g("x-github-event"), A = g("x-hub-signature-256"), E = g("x-github-delivery");
    s.debug(`${x} event received (id: ${E})`);
    let q = false, T, z = new Promise((v) => {
      T = setTimeout(() => {
        q = true, v(e.respond(Ne().stillProcessing, l));
      }, a);
    }), R = (async () => {
      try {
        let v = await e.payload(d, i);
        return await t.verifyAndReceive({ id: E, name: x, payload: v, signature: A }), clearTimeout(T), q ? e.notOurs(l) : e.respond(Ne().delivered, l);
      } catch (v) {
        if (clearTimeout(T), q) return e.notOurs(l);
        if (v instanceof B) return e.closeAfterResponse(l), e.respond($(h().webhooks_reply("too_large", void 0, "", "", i)), l);
        let k = _t(v), O = typeof k.status == "number" && k.status >= 100 && k.status <= 999 ? k.status : void 0;
        s.error(v);
        let M = h().webhooks_reply("failed", O, String(k.name || "Error"), k.message ? String(k.message) : "", 0), W = $(M);
        return k.status !== void 0 && O === void 0 && (W.status = 500), e.respond(W, l);
      }
    })();
    return await Promise.race([z, R]);
  };
}
__name(Ue, "Ue");
var He = new TextEncoder();
var ft = { url: /* @__PURE__ */ __name((e) => e.url, "url"), closeAfterResponse: /* @__PURE__ */ __name(() => {
}, "closeAfterResponse"), header: /* @__PURE__ */ __name((e, t) => e.headers.get(t), "header"), payload: lt, notOurs: /* @__PURE__ */ __name(() => new Response(null, { status: 200 }), "notOurs"), respond({ status: e, body: t, headers: r }) {
  return new Response(t, { status: e, headers: { ...r, "content-length": String(He.encode(t).length) } });
} };
function gt(e, t = {}) {
  return Ue({ platform: ft, webhooks: e, options: t });
}
__name(gt, "gt");
var $e = class {
  static {
    __name(this, "$e");
  }
  constructor(t) {
    if (!t || !t.secret) throw new Error("[@strata/webhooks] options.secret required");
    let r = { eventHandler: Z(t), secret: t.secret, additionalSecrets: t.additionalSecrets, hooks: {}, log: L(t.log) };
    this.sign = (o) => Le(t.secret, o), this.verify = (o, s) => Fe(t.secret, o, s), this.on = r.eventHandler.on, this.onAny = r.eventHandler.onAny, this.onError = r.eventHandler.onError, this.removeListener = r.eventHandler.removeListener, this.receive = r.eventHandler.receive, this.verifyAndReceive = (o) => Ie(r, o);
  }
};

// index.js
var FORWARDED = /^(x-github-|x-hub-signature|content-type$|user-agent$)/i;
var ATTEMPTS = 3;
function list(value) {
  return String(value || "").split(",").map((item) => item.trim()).filter(Boolean);
}
__name(list, "list");
function setup(env, pending2) {
  const webhooks = new $e({
    secret: env.GITHUB_WEBHOOK_SECRET,
    additionalSecrets: list(env.GITHUB_WEBHOOK_ADDITIONAL_SECRETS)
  });
  const events = list(env.EVENTS);
  const forwardRaw = /* @__PURE__ */ __name(({ id }) => {
    const delivery = pending2.get(id);
    if (delivery) delivery.wanted = true;
  }, "forwardRaw");
  if (events.length === 0 || events.includes("*")) webhooks.onAny(forwardRaw);
  else webhooks.on(events, forwardRaw);
  const path = env.WEBHOOK_PATH || "/api/github/webhooks";
  return { middleware: gt(webhooks, { path }), path };
}
__name(setup, "setup");
async function forward(url, headers, body, name, id) {
  for (let attempt = 1; ; attempt++) {
    let status = 0;
    try {
      status = (await fetch(url, { method: "POST", headers, body })).status;
    } catch {
      status = 0;
    }
    if (status >= 200 && status < 300) return console.log(`forwarded: ${name} delivery ${id} after ${attempt} attempt(s)`);
    const transient = status === 0 || status === 408 || status === 429 || status >= 500;
    if (!transient || attempt >= ATTEMPTS) return console.error(`NOT forwarded, gave up: ${name} delivery ${id} (last: ${status || "unreachable"})`);
    await new Promise((resolve) => setTimeout(resolve, 250 * 2 ** (attempt - 1)));
  }
}
__name(forward, "forward");
var state;
var pending = /* @__PURE__ */ new Map();
var index_default = {
  async fetch(request, env, context) {
    const url = new URL(request.url);
    if (url.pathname === "/health") return Response.json({ status: "ok", version: "strata-worker-js" });
    if (!state) state = setup(env, pending);
    const id = request.headers.get("x-github-delivery");
    if (url.pathname !== state.path || request.method !== "POST" || !id) return state.middleware(request);
    const copy = request.clone();
    const delivery = { wanted: false };
    pending.set(id, delivery);
    try {
      const response = await state.middleware(request);
      if (response.status === 200 && delivery.wanted && env.FORWARD_URL) {
        const headers = [...request.headers].filter(([name]) => FORWARDED.test(name));
        const body = await copy.arrayBuffer();
        context.waitUntil(forward(env.FORWARD_URL, headers, body, request.headers.get("x-github-event"), id));
      }
      return response;
    } finally {
      pending.delete(id);
    }
  }
};

// ../node_modules/wrangler/templates/middleware/middleware-ensure-req-body-drained.ts
var drainBody = /* @__PURE__ */ __name(async (request, env, _ctx, middlewareCtx) => {
  try {
    return await middlewareCtx.next(request, env);
  } finally {
    try {
      if (request.body !== null && !request.bodyUsed) {
        const reader = request.body.getReader();
        while (!(await reader.read()).done) {
        }
      }
    } catch (e) {
      console.error("Failed to drain the unused request body.", e);
    }
  }
}, "drainBody");
var middleware_ensure_req_body_drained_default = drainBody;

// ../node_modules/wrangler/templates/middleware/middleware-miniflare3-json-error.ts
function reduceError(e) {
  return {
    name: e?.name,
    message: e?.message ?? String(e),
    stack: e?.stack,
    cause: e?.cause === void 0 ? void 0 : reduceError(e.cause)
  };
}
__name(reduceError, "reduceError");
var jsonError = /* @__PURE__ */ __name(async (request, env, _ctx, middlewareCtx) => {
  try {
    return await middlewareCtx.next(request, env);
  } catch (e) {
    const error = reduceError(e);
    return Response.json(error, {
      status: 500,
      headers: { "MF-Experimental-Error-Stack": "true" }
    });
  }
}, "jsonError");
var middleware_miniflare3_json_error_default = jsonError;

// .wrangler/tmp/bundle-1VEa67/middleware-insertion-facade.js
var __INTERNAL_WRANGLER_MIDDLEWARE__ = [
  middleware_ensure_req_body_drained_default,
  middleware_miniflare3_json_error_default
];
var middleware_insertion_facade_default = index_default;

// ../node_modules/wrangler/templates/middleware/common.ts
var __facade_middleware__ = [];
function __facade_register__(...args) {
  __facade_middleware__.push(...args.flat());
}
__name(__facade_register__, "__facade_register__");
function __facade_invokeChain__(request, env, ctx, dispatch, middlewareChain) {
  const [head, ...tail] = middlewareChain;
  const middlewareCtx = {
    dispatch,
    next(newRequest, newEnv) {
      return __facade_invokeChain__(newRequest, newEnv, ctx, dispatch, tail);
    }
  };
  return head(request, env, ctx, middlewareCtx);
}
__name(__facade_invokeChain__, "__facade_invokeChain__");
function __facade_invoke__(request, env, ctx, dispatch, finalMiddleware) {
  return __facade_invokeChain__(request, env, ctx, dispatch, [
    ...__facade_middleware__,
    finalMiddleware
  ]);
}
__name(__facade_invoke__, "__facade_invoke__");

// .wrangler/tmp/bundle-1VEa67/middleware-loader.entry.ts
var __Facade_ScheduledController__ = class ___Facade_ScheduledController__ {
  constructor(scheduledTime, cron, noRetry) {
    this.scheduledTime = scheduledTime;
    this.cron = cron;
    this.#noRetry = noRetry;
  }
  static {
    __name(this, "__Facade_ScheduledController__");
  }
  #noRetry;
  noRetry() {
    if (!(this instanceof ___Facade_ScheduledController__)) {
      throw new TypeError("Illegal invocation");
    }
    this.#noRetry();
  }
};
function wrapExportedHandler(worker) {
  if (__INTERNAL_WRANGLER_MIDDLEWARE__ === void 0 || __INTERNAL_WRANGLER_MIDDLEWARE__.length === 0) {
    return worker;
  }
  for (const middleware of __INTERNAL_WRANGLER_MIDDLEWARE__) {
    __facade_register__(middleware);
  }
  const fetchDispatcher = /* @__PURE__ */ __name(function(request, env, ctx) {
    if (worker.fetch === void 0) {
      throw new Error("Handler does not export a fetch() function.");
    }
    return worker.fetch(request, env, ctx);
  }, "fetchDispatcher");
  return {
    ...worker,
    fetch(request, env, ctx) {
      const dispatcher = /* @__PURE__ */ __name(function(type, init) {
        if (type === "scheduled" && worker.scheduled !== void 0) {
          const controller = new __Facade_ScheduledController__(
            Date.now(),
            init.cron ?? "",
            () => {
            }
          );
          return worker.scheduled(controller, env, ctx);
        }
      }, "dispatcher");
      return __facade_invoke__(request, env, ctx, dispatcher, fetchDispatcher);
    }
  };
}
__name(wrapExportedHandler, "wrapExportedHandler");
function wrapWorkerEntrypoint(klass) {
  if (__INTERNAL_WRANGLER_MIDDLEWARE__ === void 0 || __INTERNAL_WRANGLER_MIDDLEWARE__.length === 0) {
    return klass;
  }
  for (const middleware of __INTERNAL_WRANGLER_MIDDLEWARE__) {
    __facade_register__(middleware);
  }
  return class extends klass {
    #fetchDispatcher = /* @__PURE__ */ __name((request, env, ctx) => {
      this.env = env;
      this.ctx = ctx;
      if (super.fetch === void 0) {
        throw new Error("Entrypoint class does not define a fetch() function.");
      }
      return super.fetch(request);
    }, "#fetchDispatcher");
    #dispatcher = /* @__PURE__ */ __name((type, init) => {
      if (type === "scheduled" && super.scheduled !== void 0) {
        const controller = new __Facade_ScheduledController__(
          Date.now(),
          init.cron ?? "",
          () => {
          }
        );
        return super.scheduled(controller);
      }
    }, "#dispatcher");
    fetch(request) {
      return __facade_invoke__(
        request,
        this.env,
        this.ctx,
        this.#dispatcher,
        this.#fetchDispatcher
      );
    }
  };
}
__name(wrapWorkerEntrypoint, "wrapWorkerEntrypoint");
var WRAPPED_ENTRY;
if (typeof middleware_insertion_facade_default === "object") {
  WRAPPED_ENTRY = wrapExportedHandler(middleware_insertion_facade_default);
} else if (typeof middleware_insertion_facade_default === "function") {
  WRAPPED_ENTRY = wrapWorkerEntrypoint(middleware_insertion_facade_default);
}
var middleware_loader_entry_default = WRAPPED_ENTRY;
export {
  __INTERNAL_WRANGLER_MIDDLEWARE__,
  middleware_loader_entry_default as default
};
//# sourceMappingURL=index.js.map
