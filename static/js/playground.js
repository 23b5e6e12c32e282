/* The API playground (/api), enhanced in place (templates/playground/playground.html).

   Without this script the page already works: a GET form renders any story's card, snippet and
   oEmbed URL on the server, and each endpoint is a link to its JSON. With it, the page reads the
   paper's own API (/api/v1/stories, /api/v1, /oembed) from this origin only, updates the card
   as the story or width changes, copies the snippet and the oEmbed URL, and shows an endpoint's
   answer (status and pretty-printed JSON) beside the list. No inline script, no third party:
   the page's CSP is `script-src 'self'` and fetches fall under `default-src 'self'`. */
(function () {
  'use strict';

  var root = document.getElementById('playground');
  if (!root || !window.fetch || !window.URLSearchParams) return;

  function $(id) { return document.getElementById(id); }

  var storySelect = $('story');
  var widthInput = $('maxwidth');
  var widthRange = $('maxwidth-range');
  var widthHint = $('maxwidth-hint');
  var snippet = $('snippet');
  var oembedField = $('oembed-url');
  var preview = $('preview');
  var copyStatus = $('copy-status');
  var list = $('endpoints');
  var query = $('q');
  var result = $('result');
  var resultStatus = $('result-status');
  var resultBody = $('result-body');

  var stories = {};      // story id -> story row from /api/v1/stories
  var cardRequest = 0;   // answers to superseded requests are dropped
  var tryRequest = 0;
  var pending = null;
  var hintText = widthHint ? widthHint.textContent : '';

  function getJSON(url) {
    return fetch(url, {headers: {Accept: 'application/json'}, credentials: 'same-origin'})
      .then(function (response) {
        if (!response.ok) throw new Error(response.status + ' ' + response.statusText);
        return response.json();
      });
  }

  function announce(region, message) {
    // Emptying first makes a screen reader repeat a message that did not change.
    region.textContent = '';
    window.requestAnimationFrame(function () { region.textContent = message; });
  }

  /* --- the card ------------------------------------------------------------------------ */

  function storyRow(id) {
    return stories[id] || {id: id, url: location.origin + '/stories/' + encodeURIComponent(id)};
  }

  function chosenWidth() {
    var value = Number(widthInput.value);
    if (widthInput.value.trim() === '' || !Number.isInteger(value) ||
        value < Number(widthInput.min) || value > Number(widthInput.max)) return null;
    return value;
  }

  function oembedAddress(storyUrl, width) {
    var params = new URLSearchParams({url: storyUrl, maxwidth: String(width), format: 'json'});
    return location.origin + root.dataset.oembed + '?' + params.toString();
  }

  function showCard(record) {
    var template = document.createElement('template');
    template.innerHTML = record.html;
    var frame = template.content.querySelector('iframe');
    if (!frame) return;
    frame.removeAttribute('loading');  // the preview is in view: no need to wait
    preview.replaceChildren(frame);
    $('preview-width').textContent = record.width;
    $('preview-height').textContent = record.height;
  }

  function updateCard() {
    pending = null;
    var width = chosenWidth();
    if (!storySelect || width === null) return Promise.resolve();
    var story = storyRow(storySelect.value);
    var address = oembedAddress(story.url, width);
    var mine = ++cardRequest;
    preview.setAttribute('aria-busy', 'true');
    return getJSON(address).then(function (record) {
      if (mine !== cardRequest) return;
      snippet.value = record.html;
      oembedField.value = address;
      showCard(record);
      var state = new URLSearchParams({story: story.id, maxwidth: String(width)});
      history.replaceState(null, '', location.pathname + '?' + state.toString());
    }, function (error) {
      if (mine === cardRequest) announce(copyStatus, 'The card could not be loaded (' + error.message + ').');
    }).then(function () {
      if (mine === cardRequest) preview.removeAttribute('aria-busy');
    });
  }

  function scheduleCard() {
    window.clearTimeout(pending);
    pending = window.setTimeout(updateCard, 150);  // a dragged slider asks once it settles
  }

  function checkWidth() {
    var ok = chosenWidth() !== null;
    if (ok) {
      widthInput.removeAttribute('aria-invalid');
      widthHint.textContent = hintText;
      widthRange.value = widthInput.value;
    } else {
      widthInput.setAttribute('aria-invalid', 'true');
      widthHint.textContent = 'Give a whole number from ' + widthInput.min + ' to ' + widthInput.max + '.';
    }
    return ok;
  }

  function loadStories() {
    return getJSON(root.dataset.stories).then(function (body) {
      var chosen = storySelect.value;
      var options = body.stories.map(function (row) {
        stories[row.id] = row;
        return new Option(row.headline, row.id, false, row.id === chosen);
      });
      if (!(chosen in stories)) {
        // The server was asked for an older story than the list holds: keep its option.
        options.push(storySelect.querySelector('option[value="' + CSS.escape(chosen) + '"]'));
        getJSON(root.dataset.stories + '/' + encodeURIComponent(chosen)).then(function (row) {
          stories[row.id] = row;
          fillTemplates();
        }, function () {});
      }
      storySelect.replaceChildren.apply(storySelect, options);
      storySelect.value = chosen;
    });
  }

  function wireCard() {
    if (!storySelect) return;
    var form = $('embed-form');
    form.querySelector('.pg-submit').hidden = true;  // changes apply as they are made
    form.addEventListener('submit', function (event) {
      event.preventDefault();
      if (checkWidth()) updateCard();
    });
    storySelect.addEventListener('change', function () {
      fillTemplates();
      updateCard();
    });
    widthRange.hidden = false;
    widthRange.addEventListener('input', function () {
      widthInput.value = widthRange.value;
      checkWidth();
      scheduleCard();
    });
    widthInput.addEventListener('input', function () {
      if (checkWidth()) scheduleCard();
    });
    widthInput.addEventListener('change', function () {
      // Leaving the field with a value out of range: take the nearest allowed one.
      if (chosenWidth() !== null) return;
      var value = Math.round(Number(widthInput.value));
      var min = Number(widthInput.min);
      var max = Number(widthInput.max);
      widthInput.value = String(Number.isFinite(value) ? Math.min(max, Math.max(min, value)) : widthRange.value);
      checkWidth();
      scheduleCard();
    });
    [snippet, oembedField].forEach(function (field) {
      field.addEventListener('focus', function () { field.select(); });
    });
    document.querySelectorAll('[data-copy]').forEach(function (button) {
      button.hidden = false;
      button.addEventListener('click', function () { copy($(button.dataset.copy), button.dataset.what); });
    });
  }

  function copy(field, what) {
    function selectInstead() {
      field.focus();
      field.select();
      announce(copyStatus, 'The ' + what + ' is selected: press Ctrl+C (⌘C on a Mac) to copy it.');
    }
    if (!navigator.clipboard || !window.isSecureContext) {
      selectInstead();
      return;
    }
    navigator.clipboard.writeText(field.value).then(function () {
      announce(copyStatus, 'Copied the ' + what + ' to the clipboard.');
    }, selectInstead);
  }

  /* --- try an endpoint ----------------------------------------------------------------- */

  function expand(template) {
    if (template.indexOf('{id}') >= 0 || template.indexOf('{YYYY-MM-DD}') >= 0) {
      var story = storySelect && stories[storySelect.value];
      if (!story) return null;
      return template.replace('{id}', encodeURIComponent(story.id))
        .replace('{YYYY-MM-DD}', story.on_air_at.slice(0, 10));
    }
    if (/\?q=$/.test(template)) return template + encodeURIComponent(query.value.trim());
    return template;
  }

  function fillTemplates() {
    list.querySelectorAll('a[data-template]').forEach(function (link) {
      var url = expand(link.dataset.template);
      if (url === null) return;
      link.href = url;
      link.closest('li').querySelector('.pg-url').textContent = url;
    });
  }

  function endpointItem(name, value) {
    var space = value.lastIndexOf(' ');
    var method = space > 0 ? value.slice(0, space) : 'GET';
    var template = value.slice(space + 1);
    var url = method === 'GET' ? expand(template) : null;
    var item = document.createElement('li');
    var verb = document.createElement('span');
    verb.className = 'pg-method';
    verb.textContent = method;
    var code = document.createElement('code');
    code.textContent = name;
    var head = code;
    if (url !== null) {
      head = document.createElement('a');
      head.href = url;
      head.dataset.endpoint = name;
      head.dataset.template = template;
      head.appendChild(code);
    }
    var shown = document.createElement('span');
    shown.className = 'pg-url';
    shown.textContent = url || template;
    item.append(verb, ' ', head, ' ', shown);
    if (method === 'POST') {
      var note = document.createElement('span');
      note.className = 'pg-note';
      var link = document.createElement('a');
      link.href = '/subscribe';
      link.textContent = 'the subscribe page';
      note.append('Takes a JSON body: try it on ', link, '.');
      item.append(' ', note);
    }
    return item;
  }

  function renderEndpoints(index) {
    var items = Object.keys(index.endpoints).map(function (name) {
      return endpointItem(name, index.endpoints[name]);
    });
    list.replaceChildren.apply(list, items);
  }

  function size(bytes) {
    return bytes < 1024 ? bytes + ' bytes' : (bytes / 1024).toFixed(1) + ' KiB';
  }

  function tryEndpoint(link) {
    list.querySelectorAll('a[aria-current]').forEach(function (a) { a.removeAttribute('aria-current'); });
    link.setAttribute('aria-current', 'true');
    var mine = ++tryRequest;
    var label = 'GET ' + link.dataset.endpoint;
    result.setAttribute('aria-busy', 'true');
    resultStatus.textContent = label + ': loading…';
    fetch(link.href, {headers: {Accept: 'application/json'}, credentials: 'same-origin'})
      .then(function (response) {
        return response.text().then(function (text) {
          if (mine !== tryRequest) return;
          var type = (response.headers.get('Content-Type') || '').split(';')[0];
          var shown = text;
          if (/json/.test(type)) {
            try { shown = JSON.stringify(JSON.parse(text), null, 2); } catch (error) { /* as sent */ }
          }
          resultStatus.textContent = label + ': ' + response.status + ' ' + response.statusText +
            ' · ' + (type || 'no type') + ' · ' + size(new Blob([text]).size);
          resultBody.textContent = shown;
          resultBody.scrollTop = 0;
          // On a phone the answer sits below the whole list: bring its first lines into view.
          if (result.getBoundingClientRect().top > window.innerHeight) {
            result.scrollIntoView({block: 'start'});
          }
        });
      }, function (error) {
        if (mine !== tryRequest) return;
        resultStatus.textContent = label + ': the request failed (' + error.message + ').';
        resultBody.textContent = '';
      })
      .then(function () { if (mine === tryRequest) result.removeAttribute('aria-busy'); });
  }

  function wireEndpoints() {
    query.closest('.pg-query').hidden = false;
    result.hidden = false;
    query.addEventListener('input', fillTemplates);
    list.addEventListener('click', function (event) {
      var link = event.target.closest('a[data-endpoint]');
      // A modified click (new tab, new window) keeps its usual meaning.
      if (!link || event.button !== 0 || event.ctrlKey || event.metaKey || event.shiftKey || event.altKey) return;
      event.preventDefault();
      tryEndpoint(link);
    });
  }

  /* A phone narrower than the default card: start from the widest card that fits the
     preview box, so nothing is clipped (a width the reader asked for in the address stays). */
  function fitWidth() {
    if (!storySelect || new URLSearchParams(location.search).has('maxwidth')) return Promise.resolve();
    var style = window.getComputedStyle(preview);
    var room = Math.floor(preview.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight));
    var width = chosenWidth();
    if (width === null || !(room > 0) || room >= width) return Promise.resolve();
    widthInput.value = String(Math.max(Number(widthInput.min), room));
    checkWidth();
    return updateCard();
  }

  /* --- start ----------------------------------------------------------------------------- */

  wireCard();
  wireEndpoints();
  // The endpoint list is drawn once the stories are known: `story` and `day` need one.
  var index = getJSON(root.dataset.index);
  var listed = storySelect ? loadStories().then(fitWidth) : Promise.resolve();
  Promise.allSettled([index, listed]).then(function (done) {
    if (done[0].status === 'fulfilled') renderEndpoints(done[0].value);
    fillTemplates();
    root.dataset.ready = 'true';  // the story list and the endpoints came from the API
  });
})();
