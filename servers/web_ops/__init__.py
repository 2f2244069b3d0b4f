"""web_ops: search, fetch and crawl the web with a real browser, inside the URL guard."""
