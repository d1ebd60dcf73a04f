// The language switcher keeps the reader's place: its links get the current #anchor.
//
// Every translated page keeps the English heading ids (`{#english-id}`), and the API reference
// has the same object ids in every language, so `/sessions/#the-conformance-kit` switched to
// Japanese lands on `/ja/sessions/#the-conformance-kit`. The anchor is read at the moment the
// reader reaches for the switcher (hover, focus, click), because Material's navigation.tracking
// changes it while the page scrolls without a `hashchange` event.
(function () {
  "use strict";
  var SELECTOR = "a.md-select__link[hreflang]";

  function keepAnchor() {
    var links = document.querySelectorAll(SELECTOR);
    for (var i = 0; i < links.length; i++) {
      var href = links[i].getAttribute("href") || "";
      links[i].setAttribute("href", href.split("#")[0] + window.location.hash);
    }
  }

  ["mouseover", "focusin", "pointerdown", "click", "auxclick"].forEach(function (type) {
    document.addEventListener(
      type,
      function (event) {
        if (event.target instanceof Element && event.target.closest(".md-select")) {
          keepAnchor();
        }
      },
      true
    );
  });
  window.addEventListener("hashchange", keepAnchor);
  keepAnchor();
})();
