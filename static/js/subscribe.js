/* The /subscribe landing form, enhanced (templates/subscribe/landing.html).

   Without this script the form POSTs to /subscribe and the server answers with a page. With it,
   the form sends the same choices as JSON to the public API named by its `data-api` attribute
   (POST /api/v1/subscribers), says inline that the confirmation email is on its way (the
   form's `role="status"` live region, scrolled into view and focused), and puts each message of a 422 problem's `errors` next
   to its own field. All sections ticked sends no `sections` (every section, later ones too),
   as the form POST does. */
(function () {
  'use strict';

  var form = document.getElementById('subscribe-form');
  if (!form || !form.dataset.api || !window.fetch) return;

  var status = form.querySelector('.form-status');
  var button = form.querySelector('button[type="submit"]');
  var NO_SECTION = 'Pick at least one section.';

  function boxes(name) {
    return Array.prototype.slice.call(form.querySelectorAll('input[name="' + name + '"]'));
  }

  function body() {
    var sections = boxes('sections');
    var chosen = sections.filter(function (box) { return box.checked; })
      .map(function (box) { return box.value; });
    var cadence = boxes('cadence').filter(function (box) { return box.checked; })[0];
    var cast = boxes('cast')[0];
    var data = {email: form.elements.email.value.trim(), cadence: cadence ? cadence.value : 'daily',
                cast: cast ? cast.checked : true};
    if (chosen.length < sections.length) data.sections = chosen;
    return data;
  }

  /* Where a field's message goes: after the email input, or at the end of the fieldset (or
     paragraph) holding the field's inputs; `focus` is what to focus for the first error. */
  function place(name) {
    var input = form.elements[name];
    if (!input) return null;
    var first = input.length !== undefined && !input.tagName ? input[0] : input;
    if (first.type === 'email' || first.type === 'text') {
      return {after: first, describe: first, focus: first, label: form.querySelector('label[for="' + first.id + '"]')};
    }
    var group = first.closest('fieldset') || first.closest('p');
    var legend = group.querySelector('legend');
    return {inside: group, describe: group, focus: first, label: legend || first.closest('label')};
  }

  function describedBy(node, ids) {
    if (ids.length) node.setAttribute('aria-describedby', ids.join(' '));
    else node.removeAttribute('aria-describedby');
  }

  function clearErrors() {
    form.querySelectorAll('.field-error').forEach(function (node) { node.remove(); });
    form.querySelectorAll('[aria-invalid]').forEach(function (node) { node.removeAttribute('aria-invalid'); });
    form.querySelectorAll('[aria-describedby]').forEach(function (node) {
      describedBy(node, node.getAttribute('aria-describedby').split(/\s+/).filter(function (id) {
        return id && id !== 'form-errors' && id.indexOf('error-') !== 0;
      }));
    });
    // The server's own error list, from a form POST sent before this script ran.
    var summary = document.getElementById('form-errors');
    if (summary) summary.remove();
  }

  function showErrors(errors) {
    var lines = [];
    var focus = null;
    Object.keys(errors).forEach(function (name) {
      var messages = [].concat(errors[name]).map(String);
      var spot = place(name);
      var label = spot && spot.label ? spot.label.textContent.trim() : name;
      lines.push(label + ': ' + messages.join(' '));
      if (!spot) return;
      var note = document.createElement('span');
      note.className = 'field-error';
      note.id = 'error-' + name;
      note.textContent = messages.join(' ');
      if (spot.after) spot.after.after(note); else spot.inside.append(note);
      var ids = (spot.describe.getAttribute('aria-describedby') || '').split(/\s+/).filter(Boolean);
      describedBy(spot.describe, ids.concat(note.id));
      spot.describe.setAttribute('aria-invalid', 'true');
      focus = focus || spot.focus;
    });
    say('Please fix this and send again. ' + lines.join(' '), true);
    if (focus) focus.focus();
  }

  function say(message, isError) {
    status.classList.toggle('is-error', Boolean(isError));
    status.classList.remove('is-sent');
    status.textContent = message;
  }

  /* The confirmation, where the reader is looking: below the button it can fall under the fold
     (a phone, or a long section list), and the emptied form then reads as reset. */
  function sent() {
    status.classList.add('is-sent');
    status.setAttribute('tabindex', '-1');
    status.focus({preventScroll: true});
    status.scrollIntoView({block: 'center'});
  }

  form.addEventListener('submit', function (event) {
    event.preventDefault();
    clearErrors();
    var data = body();
    if (data.sections && data.sections.length === 0) {
      showErrors({sections: [NO_SECTION]});
      return;
    }
    button.disabled = true;
    say('Sending…');
    fetch(form.dataset.api, {
      method: 'POST', credentials: 'same-origin', body: JSON.stringify(data),
      headers: {'Content-Type': 'application/json', Accept: 'application/json'}
    }).then(function (response) {
      return response.json().catch(function () { return {}; }).then(function (answer) {
        if (response.ok) {
          form.elements.email.value = '';
          say('Check your inbox at ' + data.email + '. ' + (answer.detail || 'A confirmation link is on its way.'));
          sent();
        } else if (response.status === 422 && answer.errors) {
          showErrors(answer.errors);
        } else if (response.status === 429) {
          var wait = Number(response.headers.get('Retry-After'));
          say('Too many tries from here: please wait ' + (wait > 0 ? wait + ' seconds' : 'a little') + ' and send again.', true);
        } else {
          say(answer.detail || 'Something went wrong (' + response.status + '). Please send again.', true);
        }
      });
    }, function () {
      say('The paper could not be reached. Check your connection and send again.', true);
    }).then(function () {
      button.disabled = false;
    });
  });
})();
