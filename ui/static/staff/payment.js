// payment.js — the checkout's payment method and the tax inside the
// bill (prices are tax-inclusive, 税込; the server computes the tax from
// [shop] tax_rate_percent, so the console never needs the rate).

import { $, show, yen } from '/assets/dom.js';

const PAYMENTS = ['cash', 'card', 'qr', 'other'];

// chosenPayment is the method picked in the checkout panel.
export function chosenPayment() {
  const el = document.querySelector('#checkout-payment input:checked');
  return el && PAYMENTS.includes(el.value) ? el.value : 'cash';
}

// resetPayment starts each checkout at cash, the usual case.
export function resetPayment() {
  const el = document.querySelector('#checkout-payment input[value="cash"]');
  if (el) el.checked = true;
}

// showBillTax shows the server bill's taxIncluded under the total. It is
// hidden when the total shown is not the server's (orders read from a
// fallback, or changed since): a tax for another total would be wrong.
export function showBillTax(serverBill, total) {
  const known = !!serverBill && typeof serverBill.taxIncluded === 'number' && Number(serverBill.total) === total;
  $('#checkout-tax').textContent = known ? yen(serverBill.taxIncluded) : '';
  $('#checkout-tax').dataset.tax = known ? String(serverBill.taxIncluded) : '';
  show('#checkout-tax-line', known);
}
