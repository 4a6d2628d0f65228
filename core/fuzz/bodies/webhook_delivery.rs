// The body of the fuzz target `webhook_delivery` (fuzz_targets/webhook_delivery.rs includes it), also run
// over its seeds and generated inputs in every test build (core/tests/fuzz_targets.rs).

use libfuzzer_sys::arbitrary::{self, Arbitrary};
use libfuzzer_sys::fuzz_target;
use strata_core::webhooks::middleware::{self, RequestHead, Route};
use strata_core::webhooks::{listener_keys, signature, validate_event_name};

#[derive(Arbitrary, Debug)]
struct Input<'a> {
    method: &'a str,
    url: &'a str,
    pathname: Option<&'a str>,
    content_type: Option<&'a str>,
    event: Option<&'a str>,
    signature: Option<&'a str>,
    delivery: Option<&'a str>,
    content_length: Option<u64>,
    path: &'a str,
    max_body: u64,
    secret: &'a str,
    additional: Vec<&'a str>,
    body: &'a [u8],
    action: Option<&'a str>,
    status: Option<u16>,
    message: &'a str,
}

fuzz_target!(|input: Input<'_>| {
    let head = RequestHead {
        method: input.method,
        url: input.url,
        pathname: input.pathname,
        content_type: input.content_type,
        event: input.event,
        signature: input.signature,
        delivery: input.delivery,
        content_length: input.content_length,
    };
    if let Route::Deliver { name, signature: header, .. } = middleware::route(&head, input.path, input.max_body) {
        let verified = signature::verify_with_fallback(input.secret, input.additional.iter().copied(), input.body, header);
        if signature::verify(input.secret, input.body, header) {
            assert!(verified);
            assert_eq!(header, signature::sign(input.secret, input.body));
        }
        let keys = listener_keys(name, input.action);
        assert_eq!(keys.last().map(String::as_str), Some("*"));
        let _ = validate_event_name(name);
    }
    let own = signature::sign(input.secret, input.body);
    assert!(signature::verify(input.secret, input.body, &own));
    let _ = middleware::failed(input.status, input.method, input.message);
    let _ = middleware::too_large(input.max_body);
});
