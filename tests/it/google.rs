//! Google Indexing API: the service account's JWT, one token for many
//! publishes, publish bodies, the per-project pool and per-property shares
//! in Pacific time, classification of Google's answers, pacing, inspection.

use crate::support::mock::MockResponse;
use crate::support::*;

const NOW: &str = "2026-12-03T09:30:00+08:00";

fn list(sb: &Sandbox, name: &str, n: usize) -> std::path::PathBuf {
    let names: Vec<String> = (1..=n).map(|i| format!("/{name}{i}")).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    sb.urls(&format!("{name}.txt"), &refs)
}

#[test]
fn the_jwt_is_signed_by_the_service_account_and_one_token_serves_many_publishes() {
    let sb = Sandbox::google("daily_quota = 50");
    let public = sb.write_google_key();
    let urls = list(&sb, "p", 3);
    let doc = sb.indexq(&["--json", "submit", urls.to_str().unwrap()]).now(NOW).output().code(0).json();
    assert_eq!(count(&doc, "accepted"), 3);
    let tokens = sb.engine.requests_to("POST", GOOGLE_TOKEN);
    assert_eq!(tokens.len(), 1, "one token per run");
    let form: std::collections::HashMap<String, String> =
        url::form_urlencoded::parse(tokens[0].body.as_bytes()).into_owned().collect();
    assert_eq!(form["grant_type"], "urn:ietf:params:oauth:grant-type:jwt-bearer");
    let assertion = &form["assertion"];
    let header = jsonwebtoken::decode_header(assertion).unwrap();
    assert_eq!(header.alg, jsonwebtoken::Algorithm::RS256);
    assert_eq!(header.kid.as_deref(), Some(GOOGLE_KEY_ID));
    let mut validation = jsonwebtoken::Validation::new(jsonwebtoken::Algorithm::RS256);
    validation.set_audience(&[format!("{}{GOOGLE_TOKEN}", sb.engine.url())]);
    let key = jsonwebtoken::DecodingKey::from_rsa_pem(public.as_bytes()).unwrap();
    let claims = jsonwebtoken::decode::<serde_json::Value>(assertion, &key, &validation).unwrap().claims;
    assert_eq!(claims["iss"], GOOGLE_EMAIL);
    assert_eq!(claims["scope"], "https://www.googleapis.com/auth/indexing");
    let (iat, exp) = (claims["iat"].as_i64().unwrap(), claims["exp"].as_i64().unwrap());
    assert!(exp > iat && exp - iat <= 3600);
    for publish in sb.engine.requests_to("POST", GOOGLE_PUBLISH) {
        assert_eq!(publish.header("authorization"), Some("Bearer ya29.test-token"));
    }
    let published = sb.google_published();
    assert_eq!(published.len(), 3);
    assert!(published.iter().all(|(_, kind)| kind == "URL_UPDATED"));
}
