//! `serve`'s tokens see only their own (issue 45): one token per entry,
//! a token's view of the queue, the budgets and the metrics narrowed to
//! its properties, read-only tokens, public metrics, and refusals that name
//! only the caller's own properties.
#![cfg(unix)]

use crate::serve::{admitted, refusal, wait_for, Served};
use crate::support::*;

const NOW: &str = "2026-12-03T09:00:00Z";

/// `site` (token `ghost`) and `shop` (token `shop`, and `dash` reading
/// it), with `serve_extra` in `[serve]`.
fn sandbox(serve_extra: &str) -> Sandbox {
    let mut sb = Sandbox::new();
    sb.more_properties = format!(
        "[[property]]\nname = \"shop\"\nsite = \"{}/shop/\"\nindexnow = {{ key_env = \"INDEXNOW_KEY\", key_location = \"{}\" }}\n",
        sb.site.url().replace("127.0.0.1", "localhost"),
        sb.key_location().replace("127.0.0.1", "localhost"),
    );
    sb.extra.push_str(&format!(
        "\n[serve]\n{serve_extra}\n\
         [[serve.token]]\nid = \"ghost\"\ntoken_env = \"GHOST_TOKEN\"\nproperties = [\"site\"]\n\
         [[serve.token]]\nid = \"shop\"\ntoken_file = \"shop.token\"\nproperties = [\"shop\"]\n\
         [[serve.token]]\nid = \"dash\"\ntoken_env = \"DASH_TOKEN\"\nproperties = [\"shop\"]\nscope = \"read\"\n"
    ));
    sb.file("shop.token", &format!("{SHOP_TOKEN}\n"));
    sb.write_config();
    sb
}

fn serve(sb: &Sandbox) -> Served {
    let run = sb.indexq(&["-v", "serve", "--listen", "127.0.0.1:0"]).now(NOW);
    Served::start_run(run.env("GHOST_TOKEN", GHOST_TOKEN).env("DASH_TOKEN", DASH_TOKEN))
}

fn shop_url(sb: &Sandbox, path: &str) -> String {
    format!("{}/shop{path}", sb.site.url().replace("127.0.0.1", "localhost"))
}

fn get(served: &Served, path: &str, token: Option<&str>) -> reqwest::blocking::Response {
    let mut req = served.client.get(format!("{}{path}", served.base));
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    req.send().unwrap()
}

fn queue(served: &Served, token: &str, query: &str) -> json::QueueList {
    let text = get(served, &format!("/v1/queue?state=due,waiting,in_flight,parked,accepted{query}"), Some(token))
        .text()
        .unwrap();
    let json::Doc::QueueList(q) = json::check_text(&text) else { panic!("not the queue document: {text}") };
    q
}

#[test]
fn two_token_entries_with_one_secret_are_a_configuration_error_naming_both() {
    let sb = sandbox("");
    // A fourth entry reads the shop's token from its own variable.
    let config = std::fs::read_to_string(sb.config_path()).unwrap();
    let config =
        format!("{config}[[serve.token]]\nid = \"copy\"\ntoken_env = \"COPY_TOKEN\"\nproperties = [\"site\"]\n");
    std::fs::write(sb.config_path(), &config).unwrap();
    let line = config.lines().position(|l| l == "token_env = \"COPY_TOKEN\"").unwrap() + 1;
    let shop_line = config.lines().position(|l| l == "token_file = \"shop.token\"").unwrap() + 1;
    let run = sb.indexq(&["serve", "--listen", "127.0.0.1:0"]).now(NOW);
    let done = run
        .env("GHOST_TOKEN", GHOST_TOKEN)
        .env("DASH_TOKEN", DASH_TOKEN)
        .env("COPY_TOKEN", format!("  {SHOP_TOKEN}"))
        .output()
        .code(2);
    let err = &done.stderr;
    assert!(err.contains(&format!("indexq.toml:{line}:")) && err.contains("`serve.token[3].token_env`"), "{err}");
    assert!(err.contains(&format!("indexq.toml:{shop_line}:")) && err.contains("`serve.token[1].token_file`"), "{err}");
    assert!(err.contains("token `copy` is the same token as `shop`"), "{err}");
    assert!(!err.contains("listening"), "{err}");
    // The suite-wide check reads every byte of the output for the token itself.
}

#[test]
fn a_token_sees_only_its_own_properties_items_budgets_and_series() {
    let sb = sandbox("");
    let served = serve(&sb);
    let draft = sb.url("/unpublished-draft");
    admitted(served.post_json("/v1/urls", Some(GHOST_TOKEN), &serde_json::json!({ "urls": [draft] })));
    let product = shop_url(&sb, "/product");
    admitted(served.post_json("/v1/urls", Some(SHOP_TOKEN), &serde_json::json!({ "urls": [product] })));
    wait_for(&sb, ENDPOINT_PATH, 2);

    // The queue: each token its own items, the read-only one too.
    for token in [SHOP_TOKEN, DASH_TOKEN] {
        let q = queue(&served, token, "");
        let urls: Vec<&str> = q.items.iter().map(|i| i.url.as_str()).collect();
        assert_eq!(urls, [product.as_str()], "the shop's items only");
    }
    let q = queue(&served, GHOST_TOKEN, "");
    assert!(q.items.iter().all(|i| i.property == "site") && !q.items.is_empty(), "{:?}", q.items);
    assert_eq!(queue(&served, SHOP_TOKEN, "&property=shop").items.len(), 1);

    // Another's property and a property that does not exist get one answer,
    // naming only the caller's own properties.
    let mut answers = Vec::new();
    for asked in ["site", "nowhere"] {
        let (status, r, _) = refusal(get(&served, &format!("/v1/queue?property={asked}"), Some(SHOP_TOKEN)));
        assert_eq!((status, r.error.as_str()), (422, "unknown_property"));
        let hint = r.hint.unwrap();
        assert!(hint.ends_with(": shop") && !hint.contains("site"), "{hint}");
        answers.push(hint);
    }
    assert_eq!(answers[0], answers[1], "one answer whether the property exists or not");
    // The same when asked to read a property's sources.
    let asked = serde_json::json!({ "property": "site" });
    let (status, r, _) = refusal(served.post_json("/v1/sources", Some(SHOP_TOKEN), &asked));
    assert_eq!((status, r.error.as_str()), (422, "unknown_property"), "{r:?}");
    assert_eq!(r.hint.as_ref(), Some(&answers[0]), "names only the caller's own");

    // The budgets.
    let text = get(&served, "/v1/budget", Some(SHOP_TOKEN)).text().unwrap();
    let json::Doc::Status(status) = json::check_text(&text) else { panic!("not the status document: {text}") };
    assert!(!status.budgets.is_empty() && status.budgets.iter().all(|b| b.property == "shop"), "{text}");
    assert!(status.groups.iter().all(|g| g.property == "shop") && status.stranded.is_empty(), "{text}");
    assert!(!text.contains("unpublished-draft"), "{text}");
    let text = get(&served, "/v1/budget", Some(GHOST_TOKEN)).text().unwrap();
    let json::Doc::Status(status) = json::check_text(&text) else { panic!("not the status document: {text}") };
    assert!(status.groups.iter().all(|g| g.property == "site") && status.stranded.is_empty(), "{text}");

    // The metrics: a token is needed, and it sees its own series.
    let (status, r, _) = refusal(get(&served, "/metrics", None));
    assert_eq!((status, r.error.as_str()), (401, "unauthorized"), "no public metrics unless configured");
    let text = get(&served, "/metrics", Some(DASH_TOKEN)).text().unwrap();
    assert!(text.contains("property=\"shop\""), "{text}");
    assert!(!text.contains("property=\"site\""), "{text}");

    // A read-only token writes nothing.
    let (status, r, _) =
        refusal(served.post_json("/v1/urls", Some(DASH_TOKEN), &serde_json::json!({ "urls": [shop_url(&sb, "/x")] })));
    assert_eq!((status, r.error.as_str()), (403, "forbidden"));
    assert!(r.message.contains("scope = \"read\""), "{}", r.message);
    let (status, _, _) = refusal(served.post_json("/v1/sources", Some(DASH_TOKEN), &serde_json::json!({})));
    assert_eq!(status, 403);
    let done = served.stop().code(0);
    assert!(done.stderr.contains("POST /v1/urls 403 token=dash"), "{}", done.stderr);
    assert_eq!(sb.received_urls().len(), 2, "the read-only token's URL was not taken");
}

#[test]
fn metrics_are_public_only_when_configured_and_a_token_still_sees_its_own() {
    let sb = sandbox("metrics_public = true");
    let served = serve(&sb);
    admitted(served.post_json("/v1/urls", Some(GHOST_TOKEN), &serde_json::json!({ "urls": [sb.url("/a")] })));
    admitted(served.post_json("/v1/urls", Some(SHOP_TOKEN), &serde_json::json!({ "urls": [shop_url(&sb, "/b")] })));
    wait_for(&sb, ENDPOINT_PATH, 2);
    let public = get(&served, "/metrics", None);
    assert_eq!(public.status(), 200);
    let text = public.text().unwrap();
    assert!(text.contains("property=\"shop\"") && text.contains("property=\"site\""), "every series: {text}");
    let text = get(&served, "/metrics", Some(GHOST_TOKEN)).text().unwrap();
    assert!(text.contains("property=\"site\"") && !text.contains("property=\"shop\""), "{text}");
    let (status, _, _) = refusal(get(&served, "/metrics", Some("not-a-configured-token-123")));
    assert_eq!(status, 401, "a wrong token is still refused");
    // Only the metrics are public.
    let (status, _, _) = refusal(get(&served, "/v1/queue", None));
    assert_eq!(status, 401);
    served.stop().code(0);
}
